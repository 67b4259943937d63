"""Everything that turns memory into text for a model: tone rules, the character's context, write-time prompts."""
