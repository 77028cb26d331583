/**
 * Text delimiters (docs/api.md, The filter language), and the tokenizer shared by text field values and text queries.
 *
 * The contract lists Latin delimiters (space, newlines and . , ? ~ ! @ # $ % ^ & * ( - + = _ ` ' : ; < > / ) ) and a
 * larger set for other scripts that contains every one of them (ASCII white space and punctuation), so one set, the
 * larger exactly as listed, serves both. Nothing is added: other Unicode white space (no-break space U+00A0, vertical
 * tab U+000B, ...) and other punctuation (full-width ＄ U+FF04, white lenticular brackets U+3016, ...) are ordinary
 * characters.
 */

/** Inclusive code point ranges in the list. */
const DELIMITER_RANGES: readonly (readonly [number, number])[] = [
  [0x0009, 0x000a], // tab, line feed
  [0x000c, 0x000d], // form feed, carriage return
  [0x0020, 0x0020], // space
  [0x0021, 0x002f], // ! " # $ % & ' ( ) * + , - . /
  [0x003a, 0x0040], // : ; < = > ? @
  [0x005b, 0x0060], // [ \ ] ^ _ `
  [0x007b, 0x007e], // { | } ~
  [0x2010, 0x203a], // general punctuation: hyphen ‐ ... single right-pointing angle quotation mark ›
  [0xfe30, 0xfe6b], // CJK compatibility forms, small form variants: ︰ ... ﹫
];

/** Single code points in the list. */
const DELIMITER_CODE_POINTS: readonly number[] = [
  // Latin-1 marks: ¡ inverted exclamation, ¦ broken bar, « » double angle quotation, soft hyphen, ¯ macron,
  // ´ acute accent, ¸ cedilla, ¿ inverted question mark.
  0x00a1, 0x00a6, 0x00ab, 0x00bb, 0x00ad, 0x00af, 0x00b4, 0x00b8, 0x00bf,
  // Spacing modifier letters: ˇ caron, ˉ macron, ˊ acute, ˋ grave, ˜ small tilde.
  0x02c7, 0x02c9, 0x02ca, 0x02cb, 0x02dc,
  // ∕ division slash.
  0x2215,
  // CJK symbols and punctuation, only the characters the list names within U+3000..U+30FB:
  0x3000, // ideographic space
  0x3001, // 、 ideographic comma
  0x3002, // 。 ideographic full stop
  0x3008, 0x3009, // 〈 〉 angle brackets
  0x300a, 0x300b, // 《 》 double angle brackets
  0x300c, 0x300d, // 「 」 corner brackets
  0x300e, 0x300f, // 『 』 white corner brackets
  0x3010, 0x3011, // 【 】 (black) lenticular brackets; the white ones, U+3016/3017, are not named
  0x3014, 0x3015, // 〔 〕 tortoise shell brackets; the white ones, U+3018/3019, are not named
  0x301d, // 〝 reversed double prime quotation mark
  0x301e, // 〞 double prime quotation mark
  0x30fb, // ・ katakana middle dot
  // Full-width forms: ！ ＂ ＃ （ ） ， ： ； ？ ＿
  0xff01, 0xff02, 0xff03, 0xff08, 0xff09, 0xff0c, 0xff1a, 0xff1b, 0xff1f, 0xff3f,
];

const DELIMITERS: ReadonlySet<number> = new Set([
  ...DELIMITER_RANGES.flatMap(([first, last]) => Array.from({ length: last - first + 1 }, (_, i) => first + i)),
  ...DELIMITER_CODE_POINTS,
]);

/** Whether a code point is a text delimiter. */
export const isDelimiterCodePoint = (codePoint: number): boolean => DELIMITERS.has(codePoint);

/** Whether `char`, one character (one code point), is a text delimiter. A longer or empty string is not. */
export function isDelimiter(char: string): boolean {
  const codePoint = char.codePointAt(0);
  return codePoint !== undefined && String.fromCodePoint(codePoint).length === char.length && DELIMITERS.has(codePoint);
}

/** Every delimiter code point, ascending (for tests and documentation). */
export const delimiterCodePoints = (): number[] => [...DELIMITERS].sort((a, b) => a - b);

/**
 * Splits text into its tokens: the maximal runs of non-delimiter characters, lower-cased. Text matching is
 * case-insensitive (operators are case-insensitive; terms follow, so `Red` matches `red`), using
 * `String.prototype.toLowerCase`, which is locale-independent. The text is lower-cased before it is split, so a
 * token never contains a delimiter and tokenizing a token gives back that token. There is no other normalization
 * (no Unicode NFKC, no stemming) and no word segmentation: CJK text without delimiters is one token, so `红色` does
 * not match `红色连衣裙` but does match `红色，连衣裙`.
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let current = '';
  for (const char of text.toLowerCase()) {
    if (DELIMITERS.has(char.codePointAt(0)!)) {
      if (current !== '') tokens.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  if (current !== '') tokens.push(current);
  return tokens;
}
