-- The operator between adjacent words of a text fq (spec 4.9 rule 3: AND unless the application sets OR).
ALTER TABLE apps ADD COLUMN text_default_operator TEXT NOT NULL DEFAULT 'AND' CHECK (text_default_operator IN ('AND', 'OR'));
