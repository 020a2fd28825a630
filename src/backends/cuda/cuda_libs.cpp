// cuBLAS, cuBLASLt and cuDNN, loaded when the CUDA backend first needs them (dlopen) instead of
// at program start. Linked directly, libcublasLt alone made every process about 140-220 MiB
// resident before main() (its static tables and relocated data), CPU-only work included
// (`quantize` on the CPU, `info`, `--version`), and a machine without the CUDA libraries could
// not start the binary at all. Now those commands never load them; device_status() loads them
// only once a usable device is found, and says which library is missing and why.
//
// The library's entry points the backend calls are defined here with the headers' own
// signatures (a mismatch is a compile error: C functions cannot be overloaded); each resolves
// its symbol once and forwards. When its library cannot be loaded it returns the library's
// "not initialized" status (0 / a fixed text for the version and name queries): the backend
// never gets that far, since device_status() is not usable then.
#include <dlfcn.h>

#include <array>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_ops.h"

#ifndef TRTUTILS_CUDA_LIBRARY_DIR
#define TRTUTILS_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif
#ifndef TRTUTILS_CUDNN_LIBRARY_DIR
#define TRTUTILS_CUDNN_LIBRARY_DIR TRTUTILS_CUDA_LIBRARY_DIR
#endif

#define TRT_STR2(x) #x
#define TRT_STR(x) TRT_STR2(x)

namespace trtutils::cuda {

namespace {

struct Library {
  Library(const char* so, const char* dir) : soname(so), build_dir(dir) {}
  const char* soname;
  const char* build_dir;  // where the build found it: tried after the loader's search path
  void* handle = nullptr;
  std::string error;
  std::once_flag once;
};

std::array<Library, 3>& libraries() {
  static std::array<Library, 3> libs{
      Library{"libcublasLt.so." TRT_STR(CUBLAS_VER_MAJOR), TRTUTILS_CUDA_LIBRARY_DIR},
      Library{"libcublas.so." TRT_STR(CUBLAS_VER_MAJOR), TRTUTILS_CUDA_LIBRARY_DIR},
      Library{"libcudnn.so." TRT_STR(CUDNN_MAJOR), TRTUTILS_CUDNN_LIBRARY_DIR}};
  return libs;
}

Library& library(CudaLibrary which) {
  Library& l = libraries()[static_cast<size_t>(which)];
  std::call_once(l.once, [&l] {
    // The loader's search first (LD_LIBRARY_PATH, the binary's RUNPATH, ld.so.cache), then the
    // toolkit folder this build used, then the toolkit's usual place.
    for (const std::string& path :
         {std::string(l.soname), std::string(l.build_dir) + "/" + l.soname,
          std::string("/usr/local/cuda/lib64/") + l.soname}) {
      l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (l.handle) return;
      if (l.error.empty()) {
        const char* e = dlerror();
        l.error = e ? e : "dlopen failed";
      }
    }
  });
  return l;
}

}  // namespace

std::string load_libraries() {
  for (CudaLibrary which : {CudaLibrary::kCublasLt, CudaLibrary::kCublas, CudaLibrary::kCudnn}) {
    const Library& l = library(which);
    if (!l.handle)
      return fmt::format(
          "{} could not be loaded ({}): install the CUDA {} toolkit's libraries (cuDNN {}) or "
          "add their folder to LD_LIBRARY_PATH",
          l.soname, l.error, CUBLAS_VER_MAJOR, CUDNN_MAJOR);
  }
  return {};
}

void* library_symbol(CudaLibrary which, const char* name) {
  Library& l = library(which);
  return l.handle ? dlsym(l.handle, name) : nullptr;
}

}  // namespace trtutils::cuda

// One forwarder: the symbol is looked up once; FAIL is returned while its library is missing.
#define TRT_FORWARD(LIB, NAME, FAIL, ...)                                           \
  static const auto fn = reinterpret_cast<decltype(&NAME)>(                         \
      ::trtutils::cuda::library_symbol(::trtutils::cuda::CudaLibrary::LIB, #NAME)); \
  if (!fn) return FAIL;                                                             \
  return fn(__VA_ARGS__)

extern "C" {

const char* cublasGetStatusName(cublasStatus_t status) {
  TRT_FORWARD(kCublas, cublasGetStatusName, "(library not loaded)", status);
}

const char* cublasGetStatusString(cublasStatus_t status) {
  TRT_FORWARD(kCublas, cublasGetStatusString, "(library not loaded)", status);
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  TRT_FORWARD(kCublasLt, cublasLtCreate, CUBLAS_STATUS_NOT_INITIALIZED, lightHandle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  TRT_FORWARD(kCublasLt, cublasLtDestroy, CUBLAS_STATUS_NOT_INITIALIZED, lightHandle);
}

size_t cublasLtGetVersion() {
  TRT_FORWARD(kCublasLt, cublasLtGetVersion, 0, );
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  TRT_FORWARD(kCublasLt, cublasLtMatmul, CUBLAS_STATUS_NOT_INITIALIZED, lightHandle, computeDesc,
              alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
              workspaceSizeInBytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulAlgoGetHeuristic, CUBLAS_STATUS_NOT_INITIALIZED, lightHandle,
              operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount,
              heuristicResultsArray, returnAlgoCount);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulDescCreate, CUBLAS_STATUS_NOT_INITIALIZED, matmulDesc,
              computeType, scaleType);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulDescDestroy, CUBLAS_STATUS_NOT_INITIALIZED, matmulDesc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulDescSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED, matmulDesc,
              attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulPreferenceCreate, CUBLAS_STATUS_NOT_INITIALIZED, pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulPreferenceDestroy, CUBLAS_STATUS_NOT_INITIALIZED, pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t sizeInBytes) {
  TRT_FORWARD(kCublasLt, cublasLtMatmulPreferenceSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED, pref,
              attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  TRT_FORWARD(kCublasLt, cublasLtMatrixLayoutCreate, CUBLAS_STATUS_NOT_INITIALIZED, matLayout, type,
              rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  TRT_FORWARD(kCublasLt, cublasLtMatrixLayoutDestroy, CUBLAS_STATUS_NOT_INITIALIZED, matLayout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  TRT_FORWARD(kCublasLt, cublasLtMatrixLayoutSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED, matLayout,
              attr, buf, sizeInBytes);
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
    const void* alpha2, const cudnnTensorDescriptor_t zDesc, const void* z,
    const cudnnTensorDescriptor_t biasDesc, const void* bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc,
    void* y) {
  TRT_FORWARD(kCudnn, cudnnConvolutionBiasActivationForward, CUDNN_STATUS_NOT_INITIALIZED, handle,
              alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, alpha2,
              zDesc, z, biasDesc, bias, activationDesc, yDesc, y);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                      const cudnnFilterDescriptor_t wDesc, const void* w,
                                      const cudnnConvolutionDescriptor_t convDesc,
                                      cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                      size_t workSpaceSizeInBytes, const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y) {
  TRT_FORWARD(kCudnn, cudnnConvolutionForward, CUDNN_STATUS_NOT_INITIALIZED, handle, alpha, xDesc,
              x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void* w,
                                           const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                           size_t workSpaceSizeInBytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxDesc, void* dx) {
  TRT_FORWARD(kCudnn, cudnnConvolutionBackwardData, CUDNN_STATUS_NOT_INITIALIZED, handle, alpha,
              wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dxDesc,
              dx);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  TRT_FORWARD(kCudnn, cudnnFindConvolutionBackwardDataAlgorithm, CUDNN_STATUS_NOT_INITIALIZED,
              handle, wDesc, dyDesc, convDesc, dxDesc, requestedAlgoCount, returnedAlgoCount,
              perfResults);
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                             const cudnnTensorDescriptor_t aDesc, const void* A, const void* beta,
                             const cudnnTensorDescriptor_t cDesc, void* C) {
  TRT_FORWARD(kCudnn, cudnnAddTensor, CUDNN_STATUS_NOT_INITIALIZED, handle, alpha, aDesc, A, beta,
              cDesc, C);
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  TRT_FORWARD(kCudnn, cudnnCreate, CUDNN_STATUS_NOT_INITIALIZED, handle);
}

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* activationDesc) {
  TRT_FORWARD(kCudnn, cudnnCreateActivationDescriptor, CUDNN_STATUS_NOT_INITIALIZED,
              activationDesc);
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc) {
  TRT_FORWARD(kCudnn, cudnnCreateConvolutionDescriptor, CUDNN_STATUS_NOT_INITIALIZED, convDesc);
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc) {
  TRT_FORWARD(kCudnn, cudnnCreateFilterDescriptor, CUDNN_STATUS_NOT_INITIALIZED, filterDesc);
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  TRT_FORWARD(kCudnn, cudnnCreateTensorDescriptor, CUDNN_STATUS_NOT_INITIALIZED, tensorDesc);
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  TRT_FORWARD(kCudnn, cudnnDestroy, CUDNN_STATUS_NOT_INITIALIZED, handle);
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc) {
  TRT_FORWARD(kCudnn, cudnnDestroyActivationDescriptor, CUDNN_STATUS_NOT_INITIALIZED,
              activationDesc);
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  TRT_FORWARD(kCudnn, cudnnDestroyConvolutionDescriptor, CUDNN_STATUS_NOT_INITIALIZED, convDesc);
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  TRT_FORWARD(kCudnn, cudnnDestroyFilterDescriptor, CUDNN_STATUS_NOT_INITIALIZED, filterDesc);
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  TRT_FORWARD(kCudnn, cudnnDestroyTensorDescriptor, CUDNN_STATUS_NOT_INITIALIZED, tensorDesc);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  TRT_FORWARD(kCudnn, cudnnFindConvolutionForwardAlgorithm, CUDNN_STATUS_NOT_INITIALIZED, handle,
              xDesc, wDesc, convDesc, yDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  TRT_FORWARD(kCudnn, cudnnGetConvolutionForwardAlgorithm_v7, CUDNN_STATUS_NOT_INITIALIZED, handle,
              srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount,
              perfResults);
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc,
                                                    int nbDims, int tensorOuputDimA[]) {
  TRT_FORWARD(kCudnn, cudnnGetConvolutionNdForwardOutputDim, CUDNN_STATUS_NOT_INITIALIZED, convDesc,
              inputTensorDesc, filterDesc, nbDims, tensorOuputDimA);
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  TRT_FORWARD(kCudnn, cudnnGetErrorString, "(library not loaded)", status);
}

size_t cudnnGetVersion() {
  TRT_FORWARD(kCudnn, cudnnGetVersion, 0, );
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                           cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t reluNanOpt, double coef) {
  TRT_FORWARD(kCudnn, cudnnSetActivationDescriptor, CUDNN_STATUS_NOT_INITIALIZED, activationDesc,
              mode, reluNanOpt, coef);
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  TRT_FORWARD(kCudnn, cudnnSetConvolutionGroupCount, CUDNN_STATUS_NOT_INITIALIZED, convDesc,
              groupCount);
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                          cudnnMathType_t mathType) {
  TRT_FORWARD(kCudnn, cudnnSetConvolutionMathType, CUDNN_STATUS_NOT_INITIALIZED, convDesc,
              mathType);
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                              int arrayLength, const int padA[],
                                              const int filterStrideA[], const int dilationA[],
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  TRT_FORWARD(kCudnn, cudnnSetConvolutionNdDescriptor, CUDNN_STATUS_NOT_INITIALIZED, convDesc,
              arrayLength, padA, filterStrideA, dilationA, mode, computeType);
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc,
                                         cudnnDataType_t dataType, cudnnTensorFormat_t format,
                                         int nbDims, const int filterDimA[]) {
  TRT_FORWARD(kCudnn, cudnnSetFilterNdDescriptor, CUDNN_STATUS_NOT_INITIALIZED, filterDesc,
              dataType, format, nbDims, filterDimA);
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  TRT_FORWARD(kCudnn, cudnnSetStream, CUDNN_STATUS_NOT_INITIALIZED, handle, streamId);
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                         cudnnDataType_t dataType, int nbDims, const int dimA[],
                                         const int strideA[]) {
  TRT_FORWARD(kCudnn, cudnnSetTensorNdDescriptor, CUDNN_STATUS_NOT_INITIALIZED, tensorDesc,
              dataType, nbDims, dimA, strideA);
}

}  // extern "C"
