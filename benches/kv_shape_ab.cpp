// Decode speed of one model under several context shapes, in one process:
// each shape has its own context (4 sequences of N cells, batch 512, flash
// attention off, as hearth on the CPU), and the shapes take turns decoding
// 128 tokens from an empty sequence, in alternating order, round after
// round. Drift of the machine falls on every shape alike, so the per-round
// ratios against the first shape are steadier than separate processes'.
// Built and run by benches/kv_shape_ab.sh.
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL ROUNDS CELLS_PER_SEQUENCE...\n", argv[0]);
        return 2;
    }
    const int rounds = atoi(argv[2]);
    std::vector<int> sizes;
    for (int i = 3; i < argc; i++) sizes.push_back(atoi(argv[i]));
    llama_backend_init();
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    std::vector<llama_context *> ctxs;
    for (int cells : sizes) {
        auto cp = llama_context_default_params();
        cp.n_ctx = cells * 4;
        cp.n_seq_max = 4;
        cp.n_batch = cp.n_ubatch = 512;
        cp.n_threads = cp.n_threads_batch = 2;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        ctxs.push_back(llama_init_from_model(model, cp));
    }
    std::vector<std::vector<double>> speed(sizes.size());
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < ctxs.size(); i++) {
            const size_t k = (r % 2) ? ctxs.size() - 1 - i : i;
            llama_memory_seq_rm(llama_get_memory(ctxs[k]), -1, -1, -1);
            const auto t0 = std::chrono::steady_clock::now();
            for (int n = 0; n < 128; n++) {
                llama_token t = 1 + n;
                if (llama_decode(ctxs[k], llama_batch_get_one(&t, 1))) {
                    fprintf(stderr, "decode failed\n");
                    return 1;
                }
            }
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            speed[k].push_back(128 / s);
        }
    }
    for (size_t k = 0; k < sizes.size(); k++) {
        std::vector<double> ratios;
        for (int r = 0; r < rounds; r++) ratios.push_back(speed[k][r] / speed[0][r]);
        printf("4 x %d cells: median %.1f tokens/s, %.3f x 4 x %d (median of per-round ratios)\n",
               sizes[k], median(speed[k]), median(ratios), sizes[0]);
    }
    return 0;
}
