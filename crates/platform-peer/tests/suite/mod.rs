mod client;
mod hello;
mod relay;
