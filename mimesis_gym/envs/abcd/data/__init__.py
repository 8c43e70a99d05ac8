"""Data of ABCDBehavior: the behavior registry, the ABCD subflow map and rules, the original pack and its generator."""
