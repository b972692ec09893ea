/**
 * 100 inputs of mixed lengths and languages for the pooling numerics (test/pooling/): short
 * queries, sentences in twelve languages and scripts, code, numbers and emoji, and paragraphs
 * long enough that all-MiniLM-L6-v2's 256-token limit truncates them.
 */

const SHORT = [
  'hello',
  'What is the capital of France?',
  'How do I reset my password?',
  'cheap flights to tokyo',
  'best pizza near me',
  'Is it going to rain tomorrow?',
  'symptoms of the flu',
  'convert 5 miles to km',
  'Who wrote Pride and Prejudice?',
  'python list comprehension example',
  'A',
  'OK.',
  '42',
  '¿Dónde está la biblioteca?',
  'Wie spät ist es?',
  'Où est la gare ?',
  '東京の天気',
  '北京烤鸭怎么做',
  'Как дела?',
  'مرحبا بالعالم',
];

const SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'A man is playing a guitar on the street corner while people walk by.',
  'The new model reduces inference latency by half on commodity hardware.',
  'Photosynthesis converts light energy into chemical energy stored in glucose.',
  'She finished the marathon in just under four hours despite the heat.',
  'Our quarterly revenue grew 12% year over year, driven by subscriptions.',
  'The committee postponed the vote until the budget report is published.',
  'Mount Everest is the highest mountain above sea level on Earth.',
  'Please remember to bring your passport and a printed copy of the ticket.',
  'The recipe calls for two cups of flour, one egg and a pinch of salt.',
  'Le chat dort paisiblement sur le canapé depuis ce matin.',
  'La réunion a été reportée à jeudi prochain en raison de la grève.',
  'Der Zug nach München hat heute leider zwanzig Minuten Verspätung.',
  'Künstliche Intelligenz verändert die Art, wie wir arbeiten und lernen.',
  'El museo del Prado alberga una de las mejores colecciones de arte europeo.',
  'Mañana vamos a la playa si no llueve durante la noche.',
  'O Brasil é o maior país da América do Sul em área e população.',
  'Il treno per Roma parte alle otto e mezza dal binario tre.',
  'De fiets staat al de hele week voor de deur van het station.',
  'Москва — столица России и крупнейший город страны.',
  'Сегодня мы будем изучать основы машинного обучения.',
  '机器学习是人工智能的一个分支，研究计算机如何从数据中学习。',
  '今天的会议改到下午三点，请大家准时参加。',
  '日本の首都は東京で、人口は約千四百万人です。',
  '新しいモデルは以前よりも高速で正確です。',
  '한국어는 한글이라는 고유한 문자를 사용합니다.',
  'القاهرة هي عاصمة مصر وأكبر مدنها.',
  'हिंदी भारत की सबसे अधिक बोली जाने वाली भाषा है।',
  'Ελλάδα είναι γνωστή για την αρχαία ιστορία και τα νησιά της.',
  'Türkiye, Avrupa ile Asya arasında bir köprü gibidir.',
  'def add(a, b):\n    return a + b',
  'SELECT name, email FROM users WHERE created_at > NOW() - INTERVAL 7 DAY;',
  'const total = items.reduce((sum, item) => sum + item.price, 0);',
  'git rebase -i HEAD~3 && git push --force-with-lease',
  'Error: ENOENT: no such file or directory, open "/tmp/config.json"',
  'The meeting is at 10:30 on 2024-03-15 in room B-204.',
  'Pi is approximately 3.14159, and e is approximately 2.71828.',
  'Call +1 (555) 012-3456 or email support@example.com for help.',
  'Great job everyone 🎉🎉 see you at the party tonight 🍕',
  'I ❤️ New York, but the rent is 💸💸💸',
  'UPPERCASE TEXT SHOULD EMBED LIKE LOWERCASE TEXT FOR AN UNCASED MODEL',
  'résumé naïve café façade coöperate',
  'Tabs\tand   multiple    spaces\nand\nnewlines.',
  "It's a well-known fact that you can't judge a book by its cover.",
  'Neural networks, despite their name, are only loosely inspired by biological neurons.',
  'The stock market closed higher on Friday after a volatile week of trading.',
  'Climate change is expected to increase the frequency of extreme weather events.',
  'The library will be closed on public holidays and the first Monday of each month.',
  'Researchers discovered a new species of frog in the rainforests of Madagascar.',
  'Remember to water the plants twice a week during the summer months.',
];

const PARAGRAPHS = [
  'Retrieval-augmented generation combines a retriever with a generator. The retriever embeds ' +
    'the query and every passage of a corpus into one vector space, finds the passages nearest ' +
    'to the query, and hands them to the generator as context. The quality of the answer depends ' +
    'on both halves: a strong generator cannot recover from passages that never mention the ' +
    'answer, and a perfect retriever is wasted on a generator that ignores its context.',
  'The city council met on Tuesday evening to discuss the proposed changes to the public ' +
    'transport network. Several residents spoke in favour of extending the tram line to the ' +
    'northern suburbs, while others worried about the cost and the years of construction. The ' +
    'council agreed to commission an independent study and to hold a second public hearing ' +
    'once its results are available, probably early next year.',
  'La Révolution française est une période de bouleversements politiques et sociaux en France ' +
    'et dans ses colonies, ainsi qu’en Europe, à la fin du XVIIIe siècle. Traditionnellement, on ' +
    'la fait commencer à l’ouverture des États généraux le 5 mai 1789 et finir au coup d’État de ' +
    'Napoléon Bonaparte le 9 novembre 1799.',
  'Die Energiewende bezeichnet den Übergang von der nicht-nachhaltigen Nutzung fossiler ' +
    'Energieträger sowie der Kernenergie zu einer nachhaltigen Energieversorgung mittels ' +
    'erneuerbarer Energien. Sie umfasst die Bereiche Strom, Wärme und Mobilität.',
  '长城是中国古代的军事防御工程，是一道高大、坚固而且连绵不断的长垣，用以限隔敌骑的行动。' +
    '长城不是一道单纯孤立的城墙，而是以城墙为主体，同大量的城、障、亭、标相结合的防御体系。',
  'Tokenizers split text into pieces that a model knows. WordPiece, used by BERT, starts from ' +
    'characters and greedily takes the longest known piece at each position, marking pieces that ' +
    'continue a word with two hash signs. Byte-level BPE, used by GPT-2 and most decoders, merges ' +
    'the most frequent adjacent byte pairs, so it never needs an unknown token.',
];

// Long inputs past the 256-token limit: the model keeps the first 256 tokens.
const LONG = [
  PARAGRAPHS.slice(0, 4).join(' '),
  (PARAGRAPHS[0]! + ' ').repeat(4),
  Array.from({ length: 120 }, (_, i) => `word${i}`).join(' '),
  (PARAGRAPHS[4]! + PARAGRAPHS[5]!).repeat(2),
];

const MIXED = [
  'Mixing languages: the café in Zürich serves 寿司 and борщ on Fridays 🍣.',
  'Q: How many legs does a spider have? A: Eight.',
  'TODO(alice): handle the empty-input case before the v2 release!!!',
  'https://example.com/search?q=sentence+embeddings&lang=en#results',
  '{"id": 17, "tags": ["a", "b"], "ok": true}',
  '1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20',
  '.....!!!???',
  'Ünïcödé sträßé Ωmega ∑ ∞ ≤ ≥ √2',
  'In 1492 Columbus sailed the ocean blue.',
  'Embeddings map text to vectors so that similar meanings land close together.',
  'one',
  'two words',
  'three short words',
  'The end.',
  'Fin.',
  'Ende.',
  '終わり。',
  'Конец.',
  'النهاية.',
  'Last sentence of the set, number one hundred.',
];

export const MIXED_SENTENCES: readonly string[] = [...SHORT, ...SENTENCES, ...PARAGRAPHS, ...LONG, ...MIXED];
if (MIXED_SENTENCES.length !== 100)
  throw new Error(`sentences.ts: ${MIXED_SENTENCES.length} inputs, not 100`);
