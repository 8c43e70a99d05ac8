"""ABCDBehavior: the policy plays a store customer enacting a realistic behavior (envs/abcd.md)."""
