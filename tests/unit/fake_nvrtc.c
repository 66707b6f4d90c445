/* A library whose file name starts with "libnvrtc" (the Makefile builds it as
 * build/tests/libnvrtc-tcftest.so) for test_nvrtc_owns, and, with and without a build-id,
 * for test_images: what it holds does not matter, only where it is mapped. */
__attribute__((visibility("default"))) int tcf_fake_nvrtc_data = 1;
__attribute__((visibility("default"))) void *tcf_fake_nvrtc_dso(void);

/* The handle __cxa_atexit receives from this library's registrations. */
void *tcf_fake_nvrtc_dso(void)
{
    extern void *__dso_handle;
    return &__dso_handle;
}
