//! Key streams for lookups: uniform random, paper-style patterns, trace replay.
