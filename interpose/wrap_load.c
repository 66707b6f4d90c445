/* Module and library loads: call the driver, and on success record the identity of what
 * was loaded for the handle it returned (recognize/images.c: fuse mode keys what it learns
 * about a kernel by the code it came from). Not boundaries: loading reads host memory and
 * touches no stream. Each row: the call, its parameters and arguments as in hooks.def, the
 * handle it fills, and the identity of what it loads. */
#include "recognize/recognize.h"
#include "interpose/interpose.h"

#define TCF_LOAD(abi, params, args, handle, id)                                          \
    CUresult tcf_hook_##abi params                                                       \
    {                                                                                    \
        tcf_fn_##abi##_t real = TCF_REAL(abi);                                           \
        if (!real)                                                                       \
            return CUDA_ERROR_NOT_FOUND;                                                 \
        CUresult rc = real args;                                                         \
        if (rc == CUDA_SUCCESS && (handle) && *(handle) &&                               \
            atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) != TCF_MODE_OFF) \
            tcf_loaded((uint64_t)(uintptr_t)*(handle), (id));                           \
        return rc;                                                                       \
    }                                                                                    \
    TCF_EXPORT(abi)

#define TCF_JIT_PARAMS CUjit_option *jitOptions, void **jitOptionsValues,                \
                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,      \
                       void **libraryOptionValues, unsigned int numLibraryOptions
#define TCF_JIT_ARGS   jitOptions, jitOptionsValues, numJitOptions, libraryOptions,      \
                       libraryOptionValues, numLibraryOptions

TCF_LOAD(cuModuleLoad, (CUmodule *module, const char *fname), (module, fname),
         module, tcf_image_file_id(fname))
TCF_LOAD(cuModuleLoadData, (CUmodule *module, const void *image), (module, image),
         module, tcf_image_id(image))
TCF_LOAD(cuModuleLoadDataEx,
         (CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
          void **optionValues),
         (module, image, numOptions, options, optionValues), module, tcf_image_id(image))
TCF_LOAD(cuModuleLoadFatBinary, (CUmodule *module, const void *fatCubin), (module, fatCubin),
         module, tcf_image_id(fatCubin))
TCF_LOAD(cuLibraryLoadData, (CUlibrary *library, const void *code, TCF_JIT_PARAMS),
         (library, code, TCF_JIT_ARGS), library, tcf_image_id(code))
TCF_LOAD(cuLibraryLoadFromFile, (CUlibrary *library, const char *fileName, TCF_JIT_PARAMS),
         (library, fileName, TCF_JIT_ARGS), library, tcf_image_file_id(fileName))
