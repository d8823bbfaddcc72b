//! Deterministic Internet-like synthetic routing tables.
