"""TauGym: customer service with tools over tau-bench's retail and airline databases (docs/envs/tau.md)."""
