mod common;

mod clipboard;
mod display;
mod input;
mod screenshot;
mod windows;
