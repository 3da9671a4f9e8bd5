mod golden;
mod hello_rules;
