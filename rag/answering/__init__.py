"""What is shown as the answer when the model's own words are not: quotes, and whether to answer at all."""
