// The ceiling of an IPC small-message round trip between two processes on one GPU, without cuwire.
//
// Two processes (a parent and a child made by fork before either touches CUDA) each allocate a 1 KiB device buffer on
// device 0, export it with cudaIpcGetMemHandle and open the other's. They play ping-pong over a socketpair: a 1-byte
// token each way per round trip, and, depending on the mode, the 1 KiB copies a device frame needs:
//   sock      tokens only: the floor of two socket wake-ups;
//   pull      as cuwire's IPC transport does: the side that receives a token copies the peer's buffer into its own
//             (cudaMemcpyAsync from the opened handle, on its own stream, then cudaStreamSynchronize) before answering;
//             both processes' CUDA contexts do GPU work every round trip;
//   one-ctx   the parent does every copy: it pushes its buffer into the child's (opened handle), synchronizes, sends the
//             token; the child answers with no GPU work; the parent pulls the child's buffer into its own. Only one
//             context does GPU work.
// Options: mode, the context's schedule (spin, yield, block, auto: cudaSetDeviceFlags), how a side waits for the token
// (block: read(2); spin: non-blocking recv in a loop), rounds, and optionally the socket: unix (a socketpair, the
// default) or tcp (a TCP connection over the loopback interface with TCP_NODELAY, as cuwire's IPC transport carries
// its records). Prints the median, p10 and p90 in microseconds of rounds after a warm-up of the same count, and checks
// the bytes of the last round.
//
// Build: nvcc -O2 -o ipc-rtt-ceiling ipc_rtt_ceiling.cu   Run: ./ipc-rtt-ceiling pull spin block 20000 [tcp]
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)

static const size_t BYTES = 1024;
static bool spinWait = false;
static const char* socketKind = "unix";

static void sendAll(int fd, const void* p, size_t n) {
    const char* c = (const char*) p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, 0);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            perror("send");
            exit(2);
        }
        c += w;
        n -= (size_t) w;
    }
}

static void recvAll(int fd, void* p, size_t n) {
    char* c = (char*) p;
    while (n > 0) {
        ssize_t r = recv(fd, c, n, spinWait ? MSG_DONTWAIT : 0);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            perror("recv");
            exit(2);
        }
        if (r == 0) {
            fprintf(stderr, "peer closed\n");
            exit(2);
        }
        c += r;
        n -= (size_t) r;
    }
}

static double nowUs() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static unsigned flagsOf(const char* s) {
    if (!strcmp(s, "spin")) return cudaDeviceScheduleSpin;
    if (!strcmp(s, "yield")) return cudaDeviceScheduleYield;
    if (!strcmp(s, "block")) return cudaDeviceScheduleBlockingSync;
    if (!strcmp(s, "auto")) return cudaDeviceScheduleAuto;
    fprintf(stderr, "schedule must be spin, yield, block or auto, not %s\n", s);
    exit(1);
}

static void side(int fd, bool parent, const char* mode, unsigned flags, int rounds) {
    CHECK(cudaSetDeviceFlags(flags));
    CHECK(cudaSetDevice(0));
    void* mine;
    CHECK(cudaMalloc(&mine, BYTES));
    CHECK(cudaMemset(mine, parent ? 0x11 : 0x22, BYTES));
    CHECK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CHECK(cudaIpcGetMemHandle(&h, mine));
    sendAll(fd, &h, sizeof h);
    cudaIpcMemHandle_t peerHandle;
    recvAll(fd, &peerHandle, sizeof peerHandle);
    void* peer;
    CHECK(cudaIpcOpenMemHandle(&peer, peerHandle, cudaIpcMemLazyEnablePeerAccess));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bool pull = !strcmp(mode, "pull");
    bool oneCtx = !strcmp(mode, "one-ctx");
    if (!pull && !oneCtx && strcmp(mode, "sock")) {
        fprintf(stderr, "mode must be sock, pull or one-ctx, not %s\n", mode);
        exit(1);
    }
    std::vector<double> us;
    char token = 't';
    for (int i = 0; i < 2 * rounds; i++) {
        if (parent) {
            double t0 = nowUs();
            if (oneCtx) {
                CHECK(cudaMemcpyAsync(peer, mine, BYTES, cudaMemcpyDeviceToDevice, s));
                CHECK(cudaStreamSynchronize(s));
            }
            sendAll(fd, &token, 1);
            recvAll(fd, &token, 1);
            if (pull || oneCtx) {
                CHECK(cudaMemcpyAsync(mine, peer, BYTES, cudaMemcpyDeviceToDevice, s));
                CHECK(cudaStreamSynchronize(s));
            }
            if (i >= rounds) us.push_back(nowUs() - t0);
        } else {
            recvAll(fd, &token, 1);
            if (pull) {
                CHECK(cudaMemcpyAsync(mine, peer, BYTES, cudaMemcpyDeviceToDevice, s));
                CHECK(cudaStreamSynchronize(s));
            }
            sendAll(fd, &token, 1);
        }
    }
    if (parent) {
        // After the last round trip both buffers hold the same bytes when copies were made.
        unsigned char a[BYTES], b[BYTES];
        CHECK(cudaMemcpy(a, mine, BYTES, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b, peer, BYTES, cudaMemcpyDeviceToHost));
        bool same = memcmp(a, b, BYTES) == 0;
        std::sort(us.begin(), us.end());
        printf("RESULT mode=%s socket=%s schedule=%s wait=%s rounds=%d median_us=%.1f p10_us=%.1f p90_us=%.1f buffers=%s\n",
                mode, socketKind, flags == cudaDeviceScheduleSpin ? "spin" : flags == cudaDeviceScheduleYield ? "yield"
                : flags == cudaDeviceScheduleBlockingSync ? "block" : "auto", spinWait ? "spin" : "block", rounds,
                us[us.size() / 2], us[us.size() / 10], us[us.size() * 9 / 10],
                !strcmp(mode, "sock") ? "untouched" : same ? "equal" : "DIFFER");
        fflush(stdout);
    }
    CHECK(cudaIpcCloseMemHandle(peer));
    CHECK(cudaFree(mine));
}

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s sock|pull|one-ctx spin|yield|block|auto block|spin ROUNDS [unix|tcp]\n", argv[0]);
        return 1;
    }
    unsigned flags = flagsOf(argv[2]);
    spinWait = !strcmp(argv[3], "spin");
    int rounds = atoi(argv[4]);
    bool tcp = argc == 6 && !strcmp(argv[5], "tcp");
    socketKind = tcp ? "tcp" : "unix";
    if (argc == 6 && !tcp && strcmp(argv[5], "unix")) {
        fprintf(stderr, "socket: unix or tcp, not %s\n", argv[5]);
        return 1;
    }
    int fds[2];
    int listener = -1;
    sockaddr_in addr = {};
    if (tcp) {
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        listener = socket(AF_INET, SOCK_STREAM, 0);
        if (listener < 0 || bind(listener, (sockaddr*) &addr, sizeof addr) != 0 || listen(listener, 1) != 0
                || getsockname(listener, (sockaddr*) &addr, &len) != 0) {
            perror("loopback listener");
            return 2;
        }
    } else if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        perror("socketpair");
        return 2;
    }
    pid_t pid = fork();  // before either process touches CUDA
    int one = 1;
    if (pid == 0) {
        int fd;
        if (tcp) {
            close(listener);
            fd = socket(AF_INET, SOCK_STREAM, 0);
            if (fd < 0 || connect(fd, (sockaddr*) &addr, sizeof addr) != 0) {
                perror("connect");
                return 2;
            }
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        } else {
            close(fds[0]);
            fd = fds[1];
        }
        side(fd, false, argv[1], flags, rounds);
        return 0;
    }
    int fd;
    if (tcp) {
        fd = accept(listener, nullptr, nullptr);
        if (fd < 0) {
            perror("accept");
            return 2;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        close(listener);
    } else {
        close(fds[1]);
        fd = fds[0];
    }
    side(fd, true, argv[1], flags, rounds);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}
