"""Lorebook file formats: SillyTavern World Info, Chub, character cards V2/V3 (JSON, PNG), NovelAI, Agnai, Risu;
reading them into the normalised lorebook model and writing World Info back. Pure: no I/O."""
