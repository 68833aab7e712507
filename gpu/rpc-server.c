// hearth-rpc-server: lends this machine's devices to a hearth elsewhere over
// llama.cpp's RPC protocol (ggml-rpc), built by `make rpc-server` from the
// llama.cpp sources hearth links, so both ends speak the same protocol.
//
// The protocol has no authentication and no encryption: bind to 127.0.0.1
// or to an address of a private network only.
//
//   hearth-rpc-server [--host 127.0.0.1] [--port 50052] [--threads N] [--cpu]
//
// It serves the GPUs the backends found beside it offer, else the CPU
// (--cpu: the CPU even where a GPU is present).
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-rpc.h"

typedef void (*start_server_fn)(const char *endpoint, const char *cache_dir, size_t n_threads,
                                size_t n_devices, ggml_backend_dev_t *devices);

static int usage(const char *me) {
    fprintf(stderr, "usage: %s [--host ADDR] [--port PORT] [--threads N] [--cpu]\n", me);
    return 2;
}

// The folder this executable lies in, where its backend modules are.
static void exe_dir(char *out, size_t size) {
    ssize_t n = readlink("/proc/self/exe", out, size - 1);
    if (n <= 0) {
        snprintf(out, size, ".");
        return;
    }
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    long port = 50052, threads = 0;
    int cpu_only = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(arg, "--host") == 0 && has_value) {
            host = argv[++i];
        } else if (strcmp(arg, "--port") == 0 && has_value) {
            port = strtol(argv[++i], NULL, 10);
        } else if (strcmp(arg, "--threads") == 0 && has_value) {
            threads = strtol(argv[++i], NULL, 10);
        } else if (strcmp(arg, "--cpu") == 0) {
            cpu_only = 1;
        } else {
            return usage(argv[0]);
        }
    }
    if (port <= 0 || port > 65535 || threads < 0) {
        return usage(argv[0]);
    }
    if (threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 1 ? cores / 2 : 1;
    }

    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);
    ggml_backend_load_all_from_path(dir);
    ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC");
    if (rpc == NULL) {
        fprintf(stderr, "hearth-rpc-server: no RPC backend (libggml-rpc.so) in %s; fix: make rpc-server\n", dir);
        return 1;
    }
    start_server_fn start = (start_server_fn)ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_start_server");
    if (start == NULL) {
        fprintf(stderr, "hearth-rpc-server: the RPC backend in %s cannot serve\n", dir);
        return 1;
    }

    ggml_backend_dev_t devices[16];
    size_t n = 0;
    for (size_t i = 0; i < ggml_backend_dev_count() && n < 16 && !cpu_only; i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        enum ggml_backend_dev_type type = ggml_backend_dev_type(dev);
        if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) {
            devices[n++] = dev;
        }
    }
    if (n == 0) {
        ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        if (cpu == NULL) {
            fprintf(stderr, "hearth-rpc-server: no device to serve (no CPU backend in %s)\n", dir);
            return 1;
        }
        devices[n++] = cpu;
    }
    char endpoint[300];
    snprintf(endpoint, sizeof endpoint, "%s:%ld", host, port);
    for (size_t i = 0; i < n; i++) {
        size_t free_bytes = 0, total = 0;
        ggml_backend_dev_memory(devices[i], &free_bytes, &total);
        fprintf(stderr, "hearth-rpc-server: serving %s (%s, %zu MiB free) on %s\n", ggml_backend_dev_name(devices[i]),
                ggml_backend_dev_description(devices[i]), free_bytes >> 20, endpoint);
    }
    fflush(stderr);
    start(endpoint, NULL, (size_t)threads, n, devices);
    return 0;
}
