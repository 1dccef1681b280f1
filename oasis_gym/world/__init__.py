"""The task world on the platform (issue 51): a benchmark task's episode run on a `Platform`."""
