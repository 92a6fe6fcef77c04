/** The vocabulary of generated text (lorem content, reasoning, string argument values). */
export const LOREM_WORDS: readonly string[] = [
  'lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit', 'sed', 'do',
  'eiusmod', 'tempor', 'incididunt', 'ut', 'labore', 'et', 'dolore', 'magna', 'aliqua', 'enim',
  'ad', 'minim', 'veniam', 'quis', 'nostrud', 'exercitation', 'ullamco', 'laboris', 'nisi', 'aliquip',
  'ex', 'ea', 'commodo', 'consequat', 'duis', 'aute', 'irure', 'in', 'reprehenderit', 'voluptate',
  'velit', 'esse', 'cillum', 'fugiat', 'nulla', 'pariatur', 'excepteur', 'sint', 'occaecat', 'cupidatat',
  'non', 'proident', 'sunt', 'culpa', 'qui', 'officia', 'deserunt', 'mollit', 'anim', 'id', 'est', 'laborum',
];

/** Each word with its leading space, as it appears after the first token of a text. */
export const SPACED_LOREM_WORDS: readonly string[] = LOREM_WORDS.map((word) => ` ${word}`);

/** The n-gram the `repeat` knob loops: a degenerate model stuck on one phrase. */
export const REPEATED_NGRAM: readonly string[] = [' the', ' answer', ' is', ' the'];
