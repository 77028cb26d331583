import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesFilter } from '../../src/ports/vector-index/filter';
import {
  FilterError,
  MAX_FQ_LENGTH,
  delimiterCodePoints,
  describeFilter,
  isDelimiter,
  isFullyPushedDown,
  matches,
  parseFilters,
  pushDown,
  toVectorFilter,
  tokenize,
  type DefaultOperator,
  type Filter,
} from '../../src/filter';
import type { SchemaField } from '../../src/storage/apps';
import type { ImageMetadata } from '../../src/storage/metadata';

const SCHEMA: SchemaField[] = [
  { name: 'tag', type: 'text', searchable: true },
  { name: 'brand', type: 'string', searchable: true },
  { name: 'count', type: 'int', searchable: true },
  { name: 'price', type: 'float', searchable: true },
  { name: 'secret', type: 'string', searchable: false },
];

const parse = (fq: string[], textDefaultOperator: DefaultOperator = 'AND'): Filter =>
  parseFilters(fq, SCHEMA, { textDefaultOperator });
const canonical = (fq: string, textDefaultOperator: DefaultOperator = 'AND'): string[] => describeFilter(parse([fq], textDefaultOperator));
const matchesText = (query: string, text: string, op: DefaultOperator = 'AND'): boolean =>
  matches(parse([`tag:${query}`], op), { tag: text });
const errorOf = (fq: string[], op: DefaultOperator = 'AND'): string => {
  try {
    parse(fq, op);
  } catch (error) {
    expect(error).toBeInstanceOf(FilterError);
    return (error as FilterError).message;
  }
  throw new Error(`no error for ${JSON.stringify(fq)}`);
};
const vectorMatches = (filter: Filter, metadata: ImageMetadata): boolean => {
  const vectorFilter = toVectorFilter(filter);
  return vectorFilter === undefined || matchesFilter(metadata, vectorFilter);
};
const hex = (codePoint: number): string => `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;

describe('delimiters (docs/api.md, The filter language)', () => {
  it('every Latin delimiter of rule 6 is one', () => {
    for (const char of [' ', '\n', '\r', ...".,?~!@#$%^&*(-+=_`':;<>/)"]) expect(isDelimiter(char), JSON.stringify(char)).toBe(true);
  });

  it.each([
    ['\t', 0x09], ['\f', 0x0c], ['"', 0x22], ['\\', 0x5c], ['[', 0x5b], ['{', 0x7b], ['|', 0x7c], ['}', 0x7d], ['~', 0x7e],
    ['¡', 0xa1], ['¦', 0xa6], ['«', 0xab], ['»', 0xbb], ['\u00ad', 0xad], ['¯', 0xaf], ['´', 0xb4], ['¸', 0xb8], ['¿', 0xbf],
    ['ˇ', 0x2c7], ['ˉ', 0x2c9], ['ˊ', 0x2ca], ['ˋ', 0x2cb], ['˜', 0x2dc],
    ['‐', 0x2010], ['—', 0x2014], ['―', 0x2015], ['‖', 0x2016], ['‘', 0x2018], ['”', 0x201d], ['•', 0x2022], ['…', 0x2026], ['‹', 0x2039], ['›', 0x203a],
    ['∕', 0x2215],
    ['\u3000', 0x3000], ['、', 0x3001], ['。', 0x3002], ['〈', 0x3008], ['》', 0x300b], ['「', 0x300c], ['」', 0x300d], ['『', 0x300e],
    ['【', 0x3010], ['〕', 0x3015], ['〝', 0x301d], ['〞', 0x301e], ['・', 0x30fb],
    ['︰', 0xfe30], ['﹐', 0xfe50], ['﹫', 0xfe6b],
    ['！', 0xff01], ['＂', 0xff02], ['＃', 0xff03], ['（', 0xff08], ['）', 0xff09], ['，', 0xff0c], ['：', 0xff1a], ['；', 0xff1b], ['？', 0xff1f], ['＿', 0xff3f],
  ])('%s (%#) is a delimiter', (char, codePoint) => {
    expect(char.codePointAt(0)).toBe(codePoint);
    expect(isDelimiter(char)).toBe(true);
  });

  it.each([
    ['a'], ['Z'], ['0'], ['中'], ['é'], ['\u000b'], ['\u00a0'], ['\u2009'], ['\u203b'], ['\u2214'], ['〃'], ['〖'], ['〘'], ['〟'], ['ー'],
    ['\ufe2f'], ['\ufe6c'], ['＄'], ['％'], ['Ａ'], ['😀'], [''], ['ab'], [', '],
  ])('%j is not a delimiter', (char) => {
    expect(isDelimiter(char)).toBe(false);
  });

  it('takes exactly the characters rule 7 names in U+3000..U+30FB', () => {
    const cjk = delimiterCodePoints().filter((codePoint) => codePoint >= 0x3000 && codePoint <= 0x30fb);
    expect(cjk.map(hex)).toEqual(
      [0x3000, 0x3001, 0x3002, 0x3008, 0x3009, 0x300a, 0x300b, 0x300c, 0x300d, 0x300e, 0x300f, 0x3010, 0x3011, 0x3014, 0x3015, 0x301d, 0x301e, 0x30fb].map(hex),
    );
  });

  it('takes the whole ranges U+2010..U+203A and U+FE30..U+FE6B, and nothing next to them', () => {
    const set = new Set(delimiterCodePoints());
    for (let codePoint = 0x2010; codePoint <= 0x203a; codePoint++) expect(set.has(codePoint), hex(codePoint)).toBe(true);
    for (let codePoint = 0xfe30; codePoint <= 0xfe6b; codePoint++) expect(set.has(codePoint), hex(codePoint)).toBe(true);
    for (const outside of [0x200f, 0x203b, 0xfe2f, 0xfe6c, 0x2214, 0x2216, 0xff00, 0xff04, 0xff3e, 0xff40]) {
      expect(set.has(outside), hex(outside)).toBe(false);
    }
    expect(delimiterCodePoints()).toHaveLength(183);
  });

  it.each([
    ['Blue-Green shirt', ['blue', 'green', 'shirt']],
    ['  a,,b..c  ', ['a', 'b', 'c']],
    ['红色，连衣裙。「新款」', ['红色', '连衣裙', '新款']],
    ['赤・青、白\u3000黒', ['赤', '青', '白', '黒']],
    ['and/or—NOT•x∕y﹐z', ['and', 'or', 'not', 'x', 'y', 'z']],
    ['ÉTÉ naïve', ['été', 'naïve']],
    ['a\u00a0b', ['a\u00a0b']],
    ['😀👍 ok', ['😀👍', 'ok']],
    ['...', []],
  ])('tokenize(%j)', (text, tokens) => {
    expect(tokenize(text)).toEqual(tokens);
  });
});

describe('string fields: exact, case-sensitive values', () => {
  it.each([
    ['brand:nike', { brand: 'nike' }, true],
    ['brand:nike', { brand: 'Nike' }, false],
    ['brand:nike', { brand: 'nike air' }, false],
    ['brand:nike OR adidas', { brand: 'adidas' }, true],
    ['brand:nike or adidas', { brand: 'adidas' }, true],
    ['brand:nike OR adidas', { brand: 'puma' }, false],
    ['brand:(nike OR adidas)', { brand: 'nike' }, true],
    ['brand:"new balance"', { brand: 'new balance' }, true],
    ['brand:"new balance" OR "a:b"', { brand: 'a:b' }, true],
    ['brand:"say \\"hi\\" \\\\o/"', { brand: 'say "hi" \\o/' }, true],
    ['brand:"OR"', { brand: 'OR' }, true],
    ['brand:""', { brand: '' }, true],
    ['brand:a-b,c.d', { brand: 'a-b,c.d' }, true],
    ['brand:红色', { brand: '红色' }, true],
    ['brand:nike', {}, false],
    ['brand:5', { brand: 5 }, false],
  ] as const)('%s on %j → %s', (fq, metadata, expected) => {
    expect(matches(parse([fq]), metadata)).toBe(expected);
  });

  it.each([
    ['brand:nike', 'brand:nike'],
    ['brand:  nike   or  "adidas" OR nike', 'brand:nike OR adidas'],
    ['brand:("new balance")', 'brand:"new balance"'],
    ['brand:"or" OR "a\\\\b"', 'brand:"or" OR "a\\\\b"'],
  ])('canonical form of %s is %s', (fq, expected) => {
    expect(canonical(fq)).toEqual([expected]);
  });
});

describe('int and float fields: exact values and inclusive ranges', () => {
  it.each([
    ['count:5', 5, true],
    ['count:5', 6, false],
    ['count:+5', 5, true],
    ['count:-3', -3, true],
    ['count:1,10', 1, true],
    ['count:1,10', 10, true],
    ['count:1,10', 0, false],
    ['count:1,10', 11, false],
    ['count: 1 , 10 ', 4, true],
    ['count:7,7', 7, true],
    ['count:-9007199254740991,9007199254740991', 0, true],
    ['price:9.99', 9.99, true],
    ['price:9.99', 9.98, false],
    ['price:0.5,1.5', 0.5, true],
    ['price:0.5,1.5', 1.5, true],
    ['price:0.5,1.5', 1.5000001, false],
    ['price:.5,2e3', 2000, true],
    ['price:-1e-3,0', -0.001, true],
    ['price:10', 10, true],
    ['price:-0', 0, true],
  ] as const)('%s on %s → %s', (fq, value, expected) => {
    const field = fq.startsWith('count') ? 'count' : 'price';
    expect(matches(parse([fq]), { [field]: value })).toBe(expected);
  });

  it('an image without the field, or with a string in it, does not match', () => {
    expect(matches(parse(['count:1,10']), {})).toBe(false);
    expect(matches(parse(['count:5']), { count: '5' })).toBe(false);
  });

  it.each([
    ['count:007', 'count:7'],
    ['price:1.50', 'price:1.5'],
    ['price:1e21,1e22', 'price:1e+21,1e+22'],
    ['price: -0 ', 'price:0'],
  ])('canonical form of %s is %s', (fq, expected) => {
    expect(canonical(fq)).toEqual([expected]);
  });
});

describe('text fields: boolean full-text queries', () => {
  const DOC = 'Red cotton shirt, blue-green stripes';

  it.each([
    ['red', true],
    ['RED', true],
    ['shirt red', true],
    ['shirt,red', true],
    ['shirt AND red', true],
    ['shirt and yellow', false],
    ['yellow OR red', true],
    ['yellow oR pink', false],
    ['NOT yellow', true],
    ['not red', false],
    ['red NOT yellow', true],
    ['red nOt shirt', false],
    ['cotton', true],
    ['cott', false],
    ['"blue-green"', true],
    ['"green blue"', true],
    ['"blue yellow"', false],
    ['blue-green', true],
    ['(yellow OR red) AND shirt', true],
    ['(yellow OR red) AND pants', false],
    ['NOT (yellow OR pink)', true],
    ['NOT NOT red', true],
    ['((red))', true],
  ])('%j on the sample text → %s', (query, expected) => {
    expect(matchesText(query, DOC)).toBe(expected);
  });

  it('precedence is NOT, AND, OR: a OR b AND NOT c is a OR (b AND (NOT c))', () => {
    expect(canonical('tag:a OR b AND NOT c')).toEqual(['tag:a OR b AND NOT c']);
    expect(parse(['tag:a OR b AND NOT c']).conditions[0]).toEqual({
      kind: 'text',
      field: 'tag',
      expr: {
        kind: 'or',
        operands: [
          { kind: 'term', tokens: ['a'] },
          { kind: 'and', operands: [{ kind: 'term', tokens: ['b'] }, { kind: 'not', operand: { kind: 'term', tokens: ['c'] } }] },
        ],
      },
    });
    expect(matchesText('a OR b AND NOT c', 'a c')).toBe(true);
    expect(matchesText('a OR b AND NOT c', 'b c')).toBe(false);
    expect(matchesText('a OR b AND NOT c', 'b')).toBe(true);
  });

  it('parentheses override precedence', () => {
    expect(matchesText('(a OR b) AND c', 'a')).toBe(false);
    expect(matchesText('a OR b AND c', 'a')).toBe(true);
    expect(matchesText('NOT (a AND b)', 'a')).toBe(true);
    expect(matchesText('NOT a AND b', 'a b')).toBe(false);
    expect(canonical('tag:(a OR b) AND c')).toEqual(['tag:(a OR b) AND c']);
    expect(canonical('tag:(a AND b) OR (c)')).toEqual(['tag:a AND b OR c']);
  });

  it('the default operator is AND, and can be OR', () => {
    expect(matchesText('a b', 'a')).toBe(false);
    expect(matchesText('a b', 'a', 'OR')).toBe(true);
    expect(matchesText('a,b', 'b', 'OR')).toBe(true);
    expect(canonical('tag:a b', 'AND')).toEqual(['tag:a AND b']);
    expect(canonical('tag:a b', 'OR')).toEqual(['tag:a OR b']);
    // The implicit operator ranks with its explicit twin.
    expect(canonical('tag:a b OR c', 'AND')).toEqual(['tag:a AND b OR c']);
    expect(canonical('tag:a b AND c', 'OR')).toEqual(['tag:a OR b AND c']);
    expect(canonical('tag:a NOT b', 'OR')).toEqual(['tag:a OR NOT b']);
  });

  it.each([
    ['a b', 'a AND b'],
    ['a,b', 'a AND b'],
    ['a.b?c~d!e@f#g$h%i^j&k*l-m+n=o_p`q\'r:s;t<u>v/w', 'a AND b AND c AND d AND e AND f AND g AND h AND i AND j AND k AND l AND m AND n AND o AND p AND q AND r AND s AND t AND u AND v AND w'],
    ['a\tb\nc\rd\fe', 'a AND b AND c AND d AND e'],
    ['红色。连衣裙', '红色 AND 连衣裙'],
    ['红色、连衣裙', '红色 AND 连衣裙'],
    ['红色，连衣裙', '红色 AND 连衣裙'],
    ['「红色」连衣裙', '红色 AND 连衣裙'],
    ['a—b•c∕d﹐e・f', 'a AND b AND c AND d AND e AND f'],
    ['《a》【b】〔c〕〝d〞', 'a AND b AND c AND d'],
    ['a！b？c：d；e（f）', 'a AND b AND c AND d AND e AND f'],
    ['a\u3000b', 'a AND b'],
    ['(a)(b)', 'a AND b'],
  ])('delimiters separate terms: %j is %j', (query, expected) => {
    expect(canonical(`tag:${query}`)).toEqual([`tag:${expected}`]);
  });

  it('matches CJK text on its tokens, without word segmentation', () => {
    const text = '红色，连衣裙。「新款」夏季・女装';
    expect(matchesText('红色', text)).toBe(true);
    expect(matchesText('连衣裙 AND 新款', text)).toBe(true);
    expect(matchesText('夏季 女装', text)).toBe(true);
    expect(matchesText('红', text)).toBe(false);
    expect(matchesText('红色连衣裙', text)).toBe(false);
    expect(matchesText('蓝色 OR 女装', text)).toBe(true);
    expect(matchesText('NOT 红色', text)).toBe(false);
  });

  it('quoted phrases are one term that needs all its tokens; quoting is how to search for an operator word', () => {
    expect(matchesText('"cats and dogs"', 'dogs and cats')).toBe(true);
    expect(matchesText('"cats and dogs"', 'cats, dogs')).toBe(false);
    expect(matchesText('"and"', 'this and that')).toBe(true);
    expect(matchesText('"cats dogs"', 'cats', 'OR')).toBe(false);
    expect(matchesText('cats dogs', 'cats', 'OR')).toBe(true);
    expect(canonical('tag:"Blue-Green" OR "not"')).toEqual(['tag:"blue green" OR "not"']);
    expect(canonical('tag:"red"')).toEqual(['tag:red']);
  });

  it('an image lacking the field matches nothing, not even NOT', () => {
    expect(matches(parse(['tag:NOT red']), {})).toBe(false);
    expect(matches(parse(['tag:NOT red']), { tag: 3 })).toBe(false);
    expect(matches(parse(['tag:NOT red']), { tag: '' })).toBe(true);
  });
});

describe('parseFilters', () => {
  it('ANDs the fq of several fields and ignores fields outside the schema', () => {
    const filter = parse(['brand:nike', 'unknown:whatever ((', 'count:1,5', 'tag:red', 'other:1', 'unknown:again']);
    expect(filter.ignoredFields).toEqual(['unknown', 'other']);
    expect(describeFilter(filter)).toEqual(['brand:nike', 'count:1,5', 'tag:red']);
    expect(matches(filter, { brand: 'nike', count: 3, tag: 'Red' })).toBe(true);
    expect(matches(filter, { brand: 'nike', count: 9, tag: 'Red' })).toBe(false);
    expect(matches(parse([]), {})).toBe(true);
  });

  it('reads field names exactly, around white space', () => {
    expect(describeFilter(parse([' brand :nike']))).toEqual(['brand:nike']);
    expect(parse(['Brand:nike']).ignoredFields).toEqual(['Brand']);
  });
});

describe('errors are FilterErrors with clear messages', () => {
  it.each([
    [['secret:x'], 'fq secret: the field is not searchable, so it cannot be used in fq.'],
    [['brand:a', 'brand:b'], 'fq brand: only one fq per field is allowed, and this field has more than one.'],
    [['brand'], 'fq: "brand" is not of the form <field>:<value>.'],
    [[':x'], 'fq: ":x" has no field name before the colon.'],
    [[`tag:${'a '.repeat(1000)}`], `fq: the parameter is 2004 characters long, more than the ${MAX_FQ_LENGTH} allowed.`],
    [['brand:'], 'fq brand: value is empty.'],
    [['brand:a b'], 'fq brand: expected OR between values at 9; a value containing spaces must be double-quoted.'],
    [['brand:a OR'], 'fq brand: expected a value after OR at end of value.'],
    [['brand:OR a'], 'fq brand: expected a value at 7, found OR (quote "OR" to match it as a value).'],
    [['brand:a OR OR'], 'fq brand: expected a value after OR at 12, found OR (quote "OR" to match it as a value).'],
    [['brand:a:b'], 'fq brand: character ":" at 8 must be inside a double-quoted value.'],
    [['brand:a\\b'], 'fq brand: character "\\" at 8 must be inside a double-quoted value.'],
    [['brand:"abc'], 'fq brand: unterminated quote starting at 7.'],
    [['brand:"abc\\"'], 'fq brand: unterminated quote starting at 7.'],
    [['brand:"a\\nb"'], 'fq brand: invalid escape "\\n" at 9; only \\" and \\\\ may follow a backslash inside quotes.'],
    [['brand:(a OR b'], 'fq brand: unbalanced parenthesis at 7.'],
    [['brand:a OR b)'], 'fq brand: unbalanced parenthesis at 13.'],
    [['brand:(a) OR b'], 'fq brand: unexpected OR at 11; nothing may follow the closing parenthesis.'],
    [['brand:a OR (b)'], 'fq brand: expected a value after OR at 12, found "(".'],
    [['brand:a (b)'], 'fq brand: unexpected "(" at 9; parentheses may only enclose the whole list of values.'],
    [['brand:()'], 'fq brand: expected a value after "(" at 8, found ")".'],
    [['count:'], 'fq count: value is empty.'],
    [['count:1.5'], 'fq count: "1.5" is not an integer.'],
    [['count:1e3'], 'fq count: "1e3" is not an integer.'],
    [['count:abc'], 'fq count: "abc" is not an integer.'],
    [['count:9007199254740992'], 'fq count: "9007199254740992" is outside the integer range -(2^53 - 1) to 2^53 - 1.'],
    [['count:10,1'], 'fq count: range must be min,max with min <= max.'],
    [['count:1,'], 'fq count: range must be min,max.'],
    [['count:,5'], 'fq count: range must be min,max.'],
    [['count:1,2,3'], 'fq count: range must be min,max.'],
    [['price:2.5,1'], 'fq price: range must be min,max with min <= max.'],
    [['price:abc'], 'fq price: "abc" is not a number.'],
    [['price:Infinity'], 'fq price: "Infinity" is not a number.'],
    [['price:1e999'], 'fq price: "1e999" is not a finite number.'],
    [['price:0x10'], 'fq price: "0x10" is not a number.'],
    [['tag:'], 'fq tag: value is empty.'],
    [['tag: ,。'], 'fq tag: value has no search terms (delimiters are not matched).'],
    [['tag:(a OR b'], 'fq tag: unbalanced parenthesis at 5.'],
    [['tag:a OR b)'], 'fq tag: unbalanced parenthesis at 11.'],
    [['tag:a AND'], 'fq tag: expected a term after AND at end of value.'],
    [['tag:a OR AND b'], 'fq tag: expected a term after OR at 10, found AND.'],
    [['tag:AND a'], 'fq tag: expected a term at 5, found AND.'],
    [['tag:NOT'], 'fq tag: expected a term after NOT at end of value.'],
    [['tag:a ()'], 'fq tag: expected a term after "(" at 8, found ")".'],
    [['tag:"" a'], 'fq tag: empty phrase at 5 (a phrase needs at least one word).'],
    [['tag:"..."'], 'fq tag: empty phrase at 5 (a phrase needs at least one word).'],
    [['tag:"a'], 'fq tag: unterminated quote starting at 5.'],
    [['tag:"\\a"'], 'fq tag: invalid escape "\\a" at 6; only \\" and \\\\ may follow a backslash inside quotes.'],
    [[`tag:${'('.repeat(33)}a${')'.repeat(33)}`], 'fq tag: more than 32 nested parentheses at 37.'],
    [['tag:红色 (连衣裙'], 'fq tag: unbalanced parenthesis at 8.'],
  ])('%j → %s', (fq, message) => {
    expect(errorOf(fq)).toBe(message);
  });

  it('carries the field and the position', () => {
    try {
      parse(['tag:(a']);
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ name: 'FilterError', field: 'tag', position: 5 });
    }
  });

  it('accepts 32 nested parentheses and 2000 characters', () => {
    expect(canonical(`tag:${'('.repeat(32)}a${')'.repeat(32)}`)).toEqual(['tag:a']);
    const longest = `tag:${'ab '.repeat(665)}a`;
    expect(longest).toHaveLength(MAX_FQ_LENGTH);
    expect(parse([longest]).conditions).toHaveLength(1);
  });
});

describe('pushing down to Vectorize', () => {
  it.each([
    ['brand:nike', { brand: { $eq: 'nike' } }],
    ['brand:nike OR puma', { brand: { $in: ['nike', 'puma'] } }],
    ['count:5', { count: { $eq: 5 } }],
    ['count:1,5', { count: { $gte: 1, $lte: 5 } }],
    ['price:0.5,1.5', { price: { $gte: 0.5, $lte: 1.5 } }],
  ])('%s → %j', (fq, expected) => {
    const filter = parse([fq]);
    expect(toVectorFilter(filter)).toEqual(expected);
    expect(isFullyPushedDown(filter)).toBe(true);
  });

  it('never pushes text down', () => {
    const filter = parse(['tag:red', 'brand:nike']);
    expect(toVectorFilter(filter)).toEqual({ brand: { $eq: 'nike' } });
    expect(isFullyPushedDown(filter)).toBe(false);
    expect(describeFilter(pushDown(filter).residual)).toEqual(['tag:red']);
    expect(toVectorFilter(parse(['tag:red']))).toBeUndefined();
    expect(toVectorFilter(parse([]))).toBeUndefined();
    expect(isFullyPushedDown(parse([]))).toBe(true);
  });

  it('keeps a condition back when it would take the filter past 2048 bytes', () => {
    const values = Array.from({ length: 60 }, (_, i) => `值${i}${'色'.repeat(12)}`);
    const filter = parse([`brand:${values.join(' OR ')}`, 'count:1,2']);
    expect(toVectorFilter(filter)).toEqual({ count: { $gte: 1, $lte: 2 } });
    expect(isFullyPushedDown(filter)).toBe(false);
    expect(pushDown(filter).residual.conditions.map((condition) => condition.field)).toEqual(['brand']);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Properties

type Ast = { t: 'term'; words: string[] } | { t: 'not'; e: Ast } | { t: 'and' | 'or'; l: Ast; r: Ast };
const WORDS = ['apple', 'pear', 'fig', 'kiwi', '梨'];
const NOISE = ['banana', 'apples', 'x'];
/** Separators between terms and operators: delimiters other than the syntax characters ( ) " and \. */
const SEPARATORS = [' ', '  ', ',', '\t', '\n', '\r\n', '.', '-', '/', '!', '?', ';', '。', '、', '，', '—', '•', '∕', '﹐', '・', '\u3000', '「', '」', '…'];

const astArb: fc.Arbitrary<Ast> = fc.letrec<{ node: Ast; leaf: Ast; not: Ast; bin: Ast }>((tie) => ({
  node: fc.oneof({ maxDepth: 5, depthIdentifier: 'ast' }, tie('leaf'), tie('not'), tie('bin'), tie('bin')),
  leaf: fc.uniqueArray(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }).map((words): Ast => ({ t: 'term', words })),
  not: tie('node').map((e): Ast => ({ t: 'not', e })),
  bin: fc.record({ t: fc.constantFrom('and' as const, 'or' as const), l: tie('node'), r: tie('node') }),
})).node;

const evalReference = (ast: Ast, present: ReadonlySet<string>): boolean => {
  switch (ast.t) {
    case 'term':
      return ast.words.every((word) => present.has(word));
    case 'not':
      return !evalReference(ast.e, present);
    case 'and':
      return evalReference(ast.l, present) && evalReference(ast.r, present);
    case 'or':
      return evalReference(ast.l, present) || evalReference(ast.r, present);
  }
};

type Gen = fc.GeneratorValue;
const randomCase = (g: Gen, word: string): string =>
  g(fc.constantFrom, 'lower', 'upper', 'mixed') === 'upper'
    ? word.toUpperCase()
    : Array.from(word, (char) => (g(fc.boolean) ? char.toUpperCase() : char)).join('');
const separator = (g: Gen): string => g(fc.constantFrom, ...SEPARATORS) + (g(fc.boolean) ? '' : g(fc.constantFrom, ...SEPARATORS));

/** Prints an AST as a query, with random operator case, separators, redundant parentheses and implicit operators. */
function printAst(ast: Ast, parentRank: number, g: Gen, defaultOperator: DefaultOperator): string {
  const rank = ast.t === 'or' ? 1 : ast.t === 'and' ? 2 : 3;
  let text: string;
  if (ast.t === 'term') {
    const [only] = ast.words;
    text =
      ast.words.length === 1 && only !== undefined && g(fc.boolean)
        ? randomCase(g, only)
        : `"${ast.words.map((word) => randomCase(g, word)).join(g(fc.constantFrom, ' ', '-', '。', '(', ')', ', '))}"`;
  } else if (ast.t === 'not') {
    text = `${randomCase(g, 'not')}${separator(g)}${printAst(ast.e, 3, g, defaultOperator)}`;
  } else {
    const implicit = defaultOperator.toLowerCase() === ast.t && g(fc.boolean);
    const operator = implicit ? separator(g) : `${separator(g)}${randomCase(g, ast.t)}${separator(g)}`;
    text = `${printAst(ast.l, rank, g, defaultOperator)}${operator}${printAst(ast.r, rank, g, defaultOperator)}`;
  }
  const optional = (): string => (g(fc.boolean) ? separator(g) : '');
  return rank < parentRank || g(fc.integer, { min: 0, max: 5 }) === 0 ? `(${optional()}${text}${optional()})` : text;
}

const docArb = fc.tuple(fc.shuffledSubarray([...WORDS, ...NOISE]), fc.gen()).map(([words, g]) => ({
  present: new Set(words.filter((word) => WORDS.includes(word))),
  text: words.map((word) => randomCase(g, word)).join(separator(g)),
}));

/** Arbitrary fq parameters for every field type, in forms a user could write. */
const stringValueArb = fc.oneof(fc.constantFrom('nike', 'Nike', 'new balance', 'OR', 'a"b', 'a\\b', '', 'x:y', '(z)'), fc.string({ maxLength: 6 }));
const quoteValue = (value: string): string => `"${value.replace(/[\\"]/g, (char) => `\\${char}`)}"`;
const intArb = fc.integer({ min: -20, max: 20 });
const floatArb = fc.oneof(fc.constantFrom(-1.5, 0, 0.5, 2, 3.25, 1e21, -0), fc.double({ noNaN: true, noDefaultInfinity: true }));
const fqArb = (defaultOperator: DefaultOperator): fc.Arbitrary<string> =>
  fc.oneof(
    fc.tuple(astArb, fc.gen()).map(([ast, g]) => `tag:${printAst(ast, 0, g, defaultOperator)}`),
    fc.uniqueArray(stringValueArb, { minLength: 1, maxLength: 4 }).map((values) => `brand:${values.map(quoteValue).join(' OR ')}`),
    intArb.map((value) => `count:${value}`),
    fc.tuple(intArb, intArb).map(([a, b]) => `count:${Math.min(a, b)},${Math.max(a, b)}`),
    floatArb.map((value) => `price:${value}`),
    fc.tuple(floatArb, floatArb).map(([a, b]) => `price:${Math.min(a, b)},${Math.max(a, b)}`),
  );
const metadataArb: fc.Arbitrary<ImageMetadata> = fc.record(
  {
    tag: fc.oneof(docArb.map((doc) => doc.text), fc.constant('')),
    brand: fc.oneof(stringValueArb, intArb),
    count: fc.oneof(intArb, fc.constantFrom('5', 5.5)),
    price: fc.oneof(floatArb, fc.constant('0.5')),
  },
  { requiredKeys: [] },
);
const defaultOperatorArb = fc.constantFrom<DefaultOperator>('AND', 'OR');

const expectFilterErrorOrRoundTrip = (fq: string[]): void => {
  let filter: Filter;
  try {
    filter = parse(fq);
  } catch (error) {
    expect(error).toBeInstanceOf(FilterError);
    return;
  }
  // The canonical form spells out every operator, so it can outgrow the length limit that the input kept to.
  const text = describeFilter(filter);
  if (text.some((fq) => fq.length > MAX_FQ_LENGTH)) return;
  expect(parse(text, 'OR').conditions).toEqual(filter.conditions);
};

describe('properties', () => {
  it('(1) parsed text queries evaluate like a reference evaluator of the generated expression', () => {
    fc.assert(
      fc.property(defaultOperatorArb, astArb, fc.gen(), fc.array(docArb, { minLength: 1, maxLength: 8 }), (defaultOperator, ast, g, docs) => {
        const query = printAst(ast, 0, g, defaultOperator);
        const filter = parse([`tag:${query}`], defaultOperator);
        for (const doc of docs) expect(matches(filter, { tag: doc.text }), `${query} on ${doc.text}`).toBe(evalReference(ast, doc.present));
      }),
      { numRuns: 400 },
    );
  });

  it('(2) parse → canonical string → parse gives the same filter, with the same results', () => {
    fc.assert(
      fc.property(
        defaultOperatorArb,
        fc.uniqueArray(fqArb('AND'), { maxLength: 4, selector: (fq) => fq.slice(0, fq.indexOf(':')) }),
        fc.array(metadataArb, { maxLength: 6 }),
        (otherOperator, fq, images) => {
          const filter = parse(fq, 'AND');
          const text = describeFilter(filter);
          const again = parse(text, otherOperator);
          expect(again).toEqual(filter);
          expect(describeFilter(again)).toEqual(text);
          for (const image of images) expect(matches(again, image)).toBe(matches(filter, image));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('(3) the parser throws nothing but FilterError on arbitrary strings, and what it accepts round-trips', () => {
    const syntax = fc.string({
      unit: fc.constantFrom('(', ')', '"', '\\', ' ', 'AND', 'or', 'Not', 'a', 'B', ',', ':', '1', '.', '-', 'e', '。', '红', '\u00a0', 'İ', 'ẞ'),
      maxLength: 30,
    });
    const anything = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), syntax);
    fc.assert(
      fc.property(fc.constantFrom('', 'tag:', 'brand:', 'count:', 'price:', 'secret:'), anything, (prefix, value) => {
        expectFilterErrorOrRoundTrip([prefix + value]);
      }),
      { numRuns: 500 },
    );
  });

  it('(3) stays fast on deep and long input', () => {
    const hostile = [
      `tag:${'('.repeat(990)}a${')'.repeat(990)}`,
      `tag:${'NOT '.repeat(497)}a`,
      `tag:${'(a AND '.repeat(32)}a${')'.repeat(32)}${' OR b'.repeat(300)}`,
      `tag:${'a OR '.repeat(399)}a`,
      `tag:${'"a" '.repeat(499)}`,
      `tag:${'(a '.repeat(665)}`,
      `tag:${'\\'.repeat(1996)}`,
      `tag:${'"'.repeat(1996)}`,
      `tag:${'红色，'.repeat(665)}`,
      `brand:${'a OR '.repeat(398)}a`,
      `brand:${'"\\\\" OR '.repeat(199)}`,
      `count:${'9'.repeat(1990)}`,
      `price:${'1'.repeat(990)},${'2'.repeat(990)}`,
    ];
    expect(hostile.every((fq) => fq.length <= MAX_FQ_LENGTH)).toBe(true);
    hostile.push(`tag:${'a'.repeat(1_000_000)}`);
    for (const fq of hostile) {
      const started = performance.now();
      expectFilterErrorOrRoundTrip([fq]);
      expect(performance.now() - started, fq.slice(0, 20)).toBeLessThan(200);
    }
    const started = performance.now();
    const NOTs = parse([`tag:${'NOT '.repeat(497)}a`]);
    expect(describeFilter(NOTs)).toEqual(['tag:NOT a']);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('(4) toVectorFilter agrees with matches on the part it pushes down', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fqArb('AND'), { maxLength: 4, selector: (fq) => fq.slice(0, fq.indexOf(':')) }),
        fc.array(metadataArb, { minLength: 1, maxLength: 8 }),
        (fq, images) => {
          const filter = parse(fq);
          const { residual } = pushDown(filter);
          const pushable = { conditions: filter.conditions.filter((condition) => condition.kind !== 'text'), ignoredFields: [] };
          expect(isFullyPushedDown(pushable)).toBe(true);
          expect(isFullyPushedDown(filter)).toBe(filter.conditions.every((condition) => condition.kind !== 'text'));
          for (const image of images) {
            expect(vectorMatches(pushable, image)).toBe(matches(pushable, image));
            expect(matches(filter, image)).toBe(vectorMatches(filter, image) && matches(residual, image));
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
