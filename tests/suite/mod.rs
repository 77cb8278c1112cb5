mod cancel;
mod errors;
mod turn;
