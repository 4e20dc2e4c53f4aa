/* kiln-bench-nosync: an LD_PRELOAD diagnosis shim that turns fsync and
 * fdatasync into no-ops. bench/harness.py reruns a few process-level loads
 * under it to measure how much of their time is waiting for the disk. Never
 * for real use: it gives up durability. */
int fsync(int fd);
int fdatasync(int fd);

int fsync(int fd) {
  (void)fd;
  return 0;
}

int fdatasync(int fd) {
  (void)fd;
  return 0;
}
