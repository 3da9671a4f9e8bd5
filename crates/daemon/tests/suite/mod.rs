//! One module per concern.

mod layout;
