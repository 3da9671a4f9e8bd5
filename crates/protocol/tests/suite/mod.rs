mod golden;
mod hello_rules;
mod schema;
