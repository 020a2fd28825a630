// TensorPool: large buffers allocated under a scope are recycled by size class, small ones and
// those allocated outside a scope are not, the free-byte bound holds, and buffers outlive the pool.
#include "core/tensor_pool.h"

#include <gtest/gtest.h>

#include "trtutils/tensor.h"

namespace trtutils {
namespace {

TEST(TensorPool, RecyclesLargeBuffersBySize) {
  auto pool = TensorPool::create(size_t{64} << 20);
  const void* first = nullptr;
  {
    const TensorPoolScope scope(pool.get());
    Tensor a = Tensor::uninitialized(DataType::kFloat32, {4, 256, 1024});  // 4 MiB
    first = a.raw();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_GE(pool->free_bytes(), size_t{4} << 20);  // back in the pool
  {
    const TensorPoolScope scope(pool.get());
    Tensor b(DataType::kFloat32, {4, 1024, 256});  // same size: the same buffer, zero-filled
    EXPECT_EQ(b.raw(), first);
    EXPECT_EQ(b.data<float>()[12345], 0.0f);
    Tensor c = Tensor::uninitialized(DataType::kFloat32, {4, 1024, 256});  // a second one
    EXPECT_NE(c.raw(), first);
    Tensor small = Tensor::uninitialized(DataType::kFloat32, {16});  // not pooled
    const size_t before = pool->free_bytes();
    small = Tensor();
    EXPECT_EQ(pool->free_bytes(), before);
  }
  Tensor outside = Tensor::uninitialized(DataType::kFloat32, {4, 256, 1024});  // no scope
  EXPECT_EQ(current_tensor_pool(), nullptr);
  const size_t before = pool->free_bytes();
  outside = Tensor();
  EXPECT_EQ(pool->free_bytes(), before);
}

TEST(TensorPool, KeepsAtMostMaxFreeBytesAndOutlivesItsOwner) {
  auto pool = TensorPool::create(size_t{3} << 20);
  Tensor kept;
  {
    const TensorPoolScope scope(pool.get());
    Tensor a = Tensor::uninitialized(DataType::kUInt8, {size_t{2} << 20});
    Tensor b = Tensor::uninitialized(DataType::kUInt8, {size_t{2} << 20});
    kept = Tensor::uninitialized(DataType::kUInt8, {size_t{2} << 20});
    kept.data<uint8_t>()[0] = 7;
  }
  EXPECT_LE(pool->free_bytes(), size_t{3} << 20);  // one of a, b kept; the other freed
  EXPECT_GT(pool->free_bytes(), 0u);
  pool.reset();  // `kept` still holds the pool alive
  EXPECT_EQ(kept.data<uint8_t>()[0], 7);
  kept = Tensor();
}

}  // namespace
}  // namespace trtutils
