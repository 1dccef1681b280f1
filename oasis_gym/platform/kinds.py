"""Post kinds (the ``post.kind`` column): a module of its own so that both the platform and
its search index can read them without importing each other."""

ORIGINAL, REPOST, QUOTE = 0, 1, 2
