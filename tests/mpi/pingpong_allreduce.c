/* An MPI job as CI runs one: rank 0 and rank 1 exchange N messages of SIZE bytes (MPI_Send then
 * MPI_Recv, a ping-pong), then MPI_Allreduce sums rank + 1 over the ranks. Prints, on rank 0,
 * "pingpong N x SIZE B: T us per round trip; allreduce sum S" (S = 3 for two ranks). Checks every
 * byte it receives: rank r sends bytes (r + i) & 0xff in round i; a wrong byte is exit 1.
 * Usage: mpirun -np 2 pingpong_allreduce [N [SIZE]] (default 1000 65536). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(const unsigned char *buf, int size, int from, int round) {
  for (int k = 0; k < size; k++)
    if (buf[k] != (unsigned char)(from + round)) {
      fprintf(stderr, "pingpong: round %d, byte %d from rank %d is %u, not %u\n", round, k, from, buf[k],
              (unsigned char)(from + round));
      return 0;
    }
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int n = argc > 1 ? atoi(argv[1]) : 1000, size = argc > 2 ? atoi(argv[2]) : 65536;
  if (ranks != 2 || n <= 0 || size <= 0) {
    if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks, N > 0 and SIZE > 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  unsigned char *out = malloc((size_t)size), *in = malloc((size_t)size);
  if (out == NULL || in == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  const int peer = 1 - rank;
  int ok = 1;
  const double t0 = MPI_Wtime();
  for (int i = 0; i < n && ok; i++) {
    memset(out, (unsigned char)(rank + i), (size_t)size);
    if (rank == 0) {
      MPI_Send(out, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(in, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
    }
    ok = check(in, size, peer, i);
  }
  const double t1 = MPI_Wtime();
  if (!ok) MPI_Abort(MPI_COMM_WORLD, 1);
  double mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("pingpong %d x %d B: %.2f us per round trip; allreduce sum %.0f\n", n, size, (t1 - t0) / n * 1e6, sum);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
