/* The symbols a module built against a newer glibc (Debian 12's 2.36) would need beyond
   glibc 2.28, the manylinux_2_28 baseline, taken back to what 2.28 has. The linker sends
   the module's references to each to its __wrap_ version here (CMakeLists.txt,
   VKSYCL_GLIBC_2_28); most come from the statically linked C++ runtime.
   - __libc_single_threaded (2.32): the C++ runtime skips atomic reference counts while it
     is set; kept 0, it always counts atomically, as it did before glibc had the flag.
   - pthread_once, __pthread_key_create (2.34, when libpthread moved into libc): the
     versions of 2.2.5, the same functions.
   - arc4random (2.36, std::random_device): the kernel's getrandom (2.25). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN char __wrap___libc_single_threaded = 0;

int vksycl_pthread_once(pthread_once_t *, void (*)(void));
__asm__(".symver vksycl_pthread_once, pthread_once@GLIBC_2.2.5");
HIDDEN int __wrap_pthread_once(pthread_once_t *once, void (*init)(void)) {
    return vksycl_pthread_once(once, init);
}

int vksycl_pthread_key_create(pthread_key_t *, void (*)(void *));
__asm__(".symver vksycl_pthread_key_create, __pthread_key_create@GLIBC_2.2.5");
HIDDEN int __wrap___pthread_key_create(pthread_key_t *key, void (*destroy)(void *)) {
    return vksycl_pthread_key_create(key, destroy);
}

HIDDEN uint32_t __wrap_arc4random(void) {
    uint32_t value;
    while (getrandom(&value, sizeof value, 0) != (ssize_t)sizeof value) {
    }
    return value;
}
