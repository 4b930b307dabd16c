//! redis-benchmark's flags, test names and output.
