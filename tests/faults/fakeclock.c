/*
 * A wall clock that a fault test can step or skew, for one process: an LD_PRELOAD shim
 * that adds an offset to clock_gettime(CLOCK_REALTIME*) and leaves every other clock
 * (CLOCK_MONOTONIC above all) untouched, as a real clock step does.
 *
 * Why our own and not libfaketime: libfaketime 0.9.10 (Debian 12) breaks Python 3.11's
 * time.sleep (clock_nanosleep on an absolute monotonic deadline) when the monotonic
 * clock is excluded from faking (libfaketime issue #426).
 *
 * The offset comes from the file named by FAULT_CLOCK_FILE, re-read at most once a
 * second: "<offset seconds> [<rate>]", e.g. "3600" (an hour ahead), "-3600", "0 1.5"
 * (running 1.5 times too fast from the moment the rate was read).  Reads use plain
 * system calls, never stdio, so nothing here can call back into clock_gettime.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double offset_s = 0.0, rate = 1.0, rate_origin_s = 0.0;
static long long last_read_ns = -1;

static long long monotonic_ns(void) {
    struct timespec t;
    real_clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void refresh(double real_s) {
    long long now = monotonic_ns();
    if (last_read_ns >= 0 && now - last_read_ns < 1000000000LL)
        return;
    last_read_ns = now;
    const char *path = getenv("FAULT_CLOCK_FILE");
    if (path == NULL)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char text[128];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    char *end;
    double new_offset = strtod(text, &end);
    if (end == text)
        return;
    double new_rate = strtod(end, &end);
    if (new_rate <= 0.0)
        new_rate = 1.0;
    if (new_rate != rate)
        rate_origin_s = real_s;
    offset_s = new_offset;
    rate = new_rate;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (real_clock_gettime == NULL)
        real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real_clock_gettime(id, ts);
    if (rc != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
        return rc;
    double real_s = (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
    pthread_mutex_lock(&lock);
    refresh(real_s);
    double fake_s = real_s + offset_s + (real_s - rate_origin_s) * (rate - 1.0);
    pthread_mutex_unlock(&lock);
    ts->tv_sec = (time_t)fake_s;
    ts->tv_nsec = (long)((fake_s - (double)ts->tv_sec) * 1e9);
    return rc;
}
