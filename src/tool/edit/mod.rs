//! The `edit` tool (seed 000 §8.3): search-and-replace through the ten-strategy cascade, shown to the user as a
//! diff before it is written.

pub mod cascade;
pub mod levenshtein;
pub mod replacers;

#[cfg(test)]
mod vectors;
