mod client;
mod hello;
mod oauth;
mod relay;
