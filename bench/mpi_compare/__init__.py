# SPDX-License-Identifier: BSD-3-Clause
"""The machinery of bench/compare_transports.py, by responsibility.

  config      paths, limits, the tests of mpi_bench, the run's Config and
              the parsers of sizes and lists
  transports  the transports: what each sets in the environment, the
              private pool of a cxl run
  results     what one run produced (Run, CxlStats) and how it is read
              from mpi_bench's output
  runner      building mpi_bench and running it: one mpiexec invocation
              per transport and test, with a time limit
  fi_providers  provider latency without MPI (bench/fi_pingpong)
  report      the tables and the CSV
  goals       the goals of the issue, computed from a run
  plot        one plot per test
"""
