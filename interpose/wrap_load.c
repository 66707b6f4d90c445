/* Module and library loads: call the driver, and on success record the identity of what
 * was loaded for the handle it returned (capture/images.c: fuse mode keys what it learns
 * about a kernel by the code it came from). Not boundaries: loading reads host memory and
 * touches no stream. */
#include "capture/capture.h"
#include "interpose/interpose.h"

static inline int tcf_on(void)
{
    return atomic_load_explicit(&tcf_interpose_mode, memory_order_relaxed) != TCF_MODE_OFF;
}

#define TCF_LOADED(handle, id_expr)                                                      \
    do {                                                                                 \
        if (rc == CUDA_SUCCESS && (handle) && *(handle) && tcf_on())                     \
            tcf_capture_loaded((uint64_t)(uintptr_t)*(handle), (id_expr));               \
    } while (0)

CUresult tcf_hook_cuModuleLoad(CUmodule *module, const char *fname)
{
    tcf_fn_cuModuleLoad_t real = TCF_REAL(cuModuleLoad);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(module, fname);
    TCF_LOADED(module, tcf_image_file_id(fname));
    return rc;
}

CUresult tcf_hook_cuModuleLoadData(CUmodule *module, const void *image)
{
    tcf_fn_cuModuleLoadData_t real = TCF_REAL(cuModuleLoadData);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(module, image);
    TCF_LOADED(module, tcf_image_id(image));
    return rc;
}

CUresult tcf_hook_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                     CUjit_option *options, void **optionValues)
{
    tcf_fn_cuModuleLoadDataEx_t real = TCF_REAL(cuModuleLoadDataEx);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(module, image, numOptions, options, optionValues);
    TCF_LOADED(module, tcf_image_id(image));
    return rc;
}

CUresult tcf_hook_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    tcf_fn_cuModuleLoadFatBinary_t real = TCF_REAL(cuModuleLoadFatBinary);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(module, fatCubin);
    TCF_LOADED(module, tcf_image_id(fatCubin));
    return rc;
}

CUresult tcf_hook_cuLibraryLoadData(CUlibrary *library, const void *code,
                                    CUjit_option *jitOptions, void **jitOptionsValues,
                                    unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                    void **libraryOptionValues, unsigned int numLibraryOptions)
{
    tcf_fn_cuLibraryLoadData_t real = TCF_REAL(cuLibraryLoadData);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(library, code, jitOptions, jitOptionsValues, numJitOptions,
                       libraryOptions, libraryOptionValues, numLibraryOptions);
    TCF_LOADED(library, tcf_image_id(code));
    return rc;
}

CUresult tcf_hook_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                        CUjit_option *jitOptions, void **jitOptionsValues,
                                        unsigned int numJitOptions,
                                        CUlibraryOption *libraryOptions,
                                        void **libraryOptionValues,
                                        unsigned int numLibraryOptions)
{
    tcf_fn_cuLibraryLoadFromFile_t real = TCF_REAL(cuLibraryLoadFromFile);
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult rc = real(library, fileName, jitOptions, jitOptionsValues, numJitOptions,
                       libraryOptions, libraryOptionValues, numLibraryOptions);
    TCF_LOADED(library, tcf_image_file_id(fileName));
    return rc;
}

TCF_EXPORT(cuModuleLoad)
TCF_EXPORT(cuModuleLoadData)
TCF_EXPORT(cuModuleLoadDataEx)
TCF_EXPORT(cuModuleLoadFatBinary)
TCF_EXPORT(cuLibraryLoadData)
TCF_EXPORT(cuLibraryLoadFromFile)
