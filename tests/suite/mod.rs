mod binary;
mod cancel;
mod errors;
mod permission;
mod protocol;
mod turn;
