"""The operator library: each module adds operators to streams and scopes."""
