"""TauGym: customer service with tools over tau-bench's retail and airline databases (envs/tau.md)."""
