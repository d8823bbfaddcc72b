//! Readers for routing tables, update traces and address lists.
