"""ABCDBehavior: the policy plays a store customer enacting a realistic behavior (docs/envs/abcd.md)."""
