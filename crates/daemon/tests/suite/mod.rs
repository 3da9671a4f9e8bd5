//! One module per concern.

mod docs;
mod layout;
