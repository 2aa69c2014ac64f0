/*
 * berth-reseed: makes the guest kernel reseed its CRNG now (ioctl RNDRESEEDCRNG, needs CAP_SYS_ADMIN).
 *
 * After a fork the host mixes fresh randomness into the guest (agent RNG_SEED: write + RNDADDENTROPY), but on
 * Linux >= 5.18 a credited write does not reseed an already initialised CRNG: every fork of one snapshot would
 * keep producing the same /dev/urandom bytes until the next timed reseed. The agent's RNG_SEED now reseeds itself;
 * the microvm driver runs this only for a guest whose agent does not confine runs (images built before).
 */
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror("berth-reseed: /dev/urandom"); return 1; }
    if (ioctl(fd, RNDRESEEDCRNG) != 0) { perror("berth-reseed: RNDRESEEDCRNG"); return 1; }
    close(fd);
    return 0;
}
