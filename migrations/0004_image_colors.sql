-- The image's dominant colours as the inference service measured them: [{"hex": "rrggbb", "ratio": 0..1}].
ALTER TABLE images ADD COLUMN colors TEXT NOT NULL DEFAULT '[]';
