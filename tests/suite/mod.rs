mod binary;
mod cancel;
mod edits;
mod errors;
mod permission;
mod protocol;
mod shell;
mod turn;
