/**
 * Embedding models as image rows hold them: by their number in the database's embed_models (migrations/0023), a
 * small integer instead of an id of up to 200 characters, in the row and in its index (docs/decisions.md, "Rows that
 * stay small"). Statements find the number by the model's id themselves, through the table's unique index, so no
 * copy of the numbers can go stale; a statement that writes a number comes after registerEmbedModel in its batch.
 */

/** SQL: the number of the model whose id is bound as `param`; 0, no model's, when it has none, so no image is in it. */
export const embedModelNumber = (param: string): string => `COALESCE((SELECT id FROM embed_models WHERE name = ${param}), 0)`;

/** Gives `model` a number unless it has one. */
export const registerEmbedModel = (db: D1Database, model: string): D1PreparedStatement => db.prepare('INSERT OR IGNORE INTO embed_models (name) VALUES (?)').bind(model);
