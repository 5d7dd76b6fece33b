"""What the tests and the benchmarks share: test servers, harnesses and the import graph reader."""
