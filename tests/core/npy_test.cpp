#include "trtutils/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

#include "trtutils/file_util.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

// Fixtures written by numpy (tests/data/npy/make_fixtures.py).
fs::path fixture(const char* name) {
  return fs::path(TRTUTILS_TEST_DATA_DIR) / "npy" / name;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

ErrorCode error_code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no trtutils::Error thrown";
  return ErrorCode::kInternal;
}

TEST(Npy, ReadsNumpyFloat32) {
  const Tensor t = npy_load(fixture("f32_2x3.npy"));
  EXPECT_EQ(t.dtype(), DataType::kFloat32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(t), (std::vector<float>{-1, -0.5f, 0, 0.5f, 1, 1.5f}));
}

TEST(Npy, ReadsBigEndianFloat64) {
  const Tensor t = npy_load(fixture("f64_be_2x2.npy"));
  EXPECT_EQ(t.dtype(), DataType::kFloat64);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  const auto v = values<double>(t);
  EXPECT_EQ(v[0], 1.5);
  EXPECT_EQ(v[1], -2.25);
  EXPECT_EQ(v[2], 1e300);
  EXPECT_EQ(v[3], 0.0);
  EXPECT_TRUE(std::signbit(v[3]));
}

TEST(Npy, ReadsScalarAndOneDim) {
  const Tensor s = npy_load(fixture("i64_scalar.npy"));
  EXPECT_EQ(s.dtype(), DataType::kInt64);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.data<int64_t>()[0], -42);

  const Tensor u = npy_load(fixture("u8_5.npy"));
  EXPECT_EQ(u.dtype(), DataType::kUInt8);
  EXPECT_EQ(u.shape(), Shape{5});
  EXPECT_EQ(values<uint8_t>(u), (std::vector<uint8_t>{0, 50, 100, 150, 200}));

  const Tensor b = npy_load(fixture("bool_4.npy"));
  EXPECT_EQ(b.dtype(), DataType::kBool);
  EXPECT_EQ(values<uint8_t>(b), (std::vector<uint8_t>{1, 0, 0, 1}));

  const Tensor u16 = npy_load(fixture("u16_2.npy"));
  EXPECT_EQ(u16.dtype(), DataType::kUInt16);
  EXPECT_EQ(values<uint16_t>(u16), (std::vector<uint16_t>{1, 65535}));
}

TEST(Npy, ReadsVersion2And3Headers) {
  const Tensor h = npy_load(fixture("f16_3_v2.npy"));
  EXPECT_EQ(h.dtype(), DataType::kFloat16);
  EXPECT_EQ(h.shape(), Shape{3});
  EXPECT_EQ(h.at_double(0), 1.0);
  EXPECT_EQ(h.at_double(1), -2.0);
  EXPECT_EQ(h.at_double(2), 65504.0);

  const Tensor i = npy_load(fixture("i32_be_3_v3.npy"));  // also big-endian
  EXPECT_EQ(i.dtype(), DataType::kInt32);
  EXPECT_EQ(values<int32_t>(i), (std::vector<int32_t>{1, -2, 70000}));

  const Tensor s = npy_load(fixture("i16_be_2x2.npy"));
  EXPECT_EQ(s.dtype(), DataType::kInt16);
  EXPECT_EQ(values<int16_t>(s), (std::vector<int16_t>{1, -1, 300, -32768}));
}

TEST(Npy, RefusesFortranOrder) {
  std::string msg;
  EXPECT_EQ(error_code_of([] { npy_load(fixture("fortran_2x3.npy")); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("Fortran-ordered; save it with numpy.ascontiguousarray"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("fortran_2x3.npy"), std::string::npos) << msg;
}

TEST(Npy, RefusesTruncatedAndMalformed) {
  const std::string good = read_file(fixture("f32_2x3.npy"));
  // Every prefix of a valid file is refused with kInvalidArgument (never a crash).
  for (size_t n = 0; n < good.size(); ++n) {
    std::string msg;
    EXPECT_EQ(error_code_of([&] { npy_from_bytes(good.substr(0, n), "cut.npy"); }, &msg),
              ErrorCode::kInvalidArgument)
        << n;
    EXPECT_NE(msg.find("cut.npy"), std::string::npos) << msg;
  }
  // Extra trailing data, a header length past the end, a bad magic, an object dtype.
  EXPECT_EQ(error_code_of([&] { npy_from_bytes(good + "xx"); }), ErrorCode::kInvalidArgument);
  std::string big_len = good;
  big_len[8] = '\xff';
  big_len[9] = '\xff';
  EXPECT_EQ(error_code_of([&] { npy_from_bytes(big_len); }), ErrorCode::kInvalidArgument);
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  EXPECT_EQ(error_code_of([&] { npy_from_bytes(bad_magic); }), ErrorCode::kInvalidArgument);
  std::string obj = good;
  const size_t at = obj.find("<f4");
  obj.replace(at, 3, "|O8");
  EXPECT_EQ(error_code_of([&] { npy_from_bytes(obj); }), ErrorCode::kInvalidArgument);
  std::string neg = good;
  neg.replace(neg.find("(2, 3)"), 6, "(2,-3)");
  EXPECT_EQ(error_code_of([&] { npy_from_bytes(neg); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([] { npy_load("/nonexistent/x.npy"); }), ErrorCode::kIO);
}

TEST(Npy, WriteReadRoundTrip) {
  const fs::path dir = fs::temp_directory_path() / "trtutils_npy_test";
  fs::create_directories(dir);
  struct Case {
    DataType dtype;
    Shape shape;
  };
  const Case cases[] = {
      {DataType::kFloat32, {2, 3}},  {DataType::kFloat16, {4}}, {DataType::kFloat64, {}},
      {DataType::kInt8, {3, 1, 2}},  {DataType::kUInt8, {0}},   {DataType::kInt16, {5}},
      {DataType::kUInt16, {2, 2}},   {DataType::kInt32, {7}},   {DataType::kUInt32, {1}},
      {DataType::kInt64, {2, 0, 3}}, {DataType::kUInt64, {3}},  {DataType::kBool, {2, 2}}};
  for (const auto& c : cases) {
    Tensor t(c.dtype, c.shape);
    auto* p = t.data<uint8_t>();
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
    if (c.dtype == DataType::kBool)
      for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
    const fs::path f = dir / (std::string(dtype_name(c.dtype)) + ".npy");
    npy_save(f, t);
    const Tensor r = npy_load(f);
    EXPECT_EQ(r.dtype(), c.dtype);
    EXPECT_EQ(r.shape(), c.shape);
    ASSERT_EQ(r.nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(r.raw(), t.raw(), t.nbytes()), 0) << dtype_name(c.dtype);
    // numpy's layout: data 64-byte aligned, header ends with '\n'.
    const std::string bytes = read_file(f);
    EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0u);
    EXPECT_EQ(bytes[bytes.size() - t.nbytes() - 1], '\n');
  }
  EXPECT_EQ(error_code_of([] { npy_to_bytes(Tensor(DataType::kBFloat16, {2})); }),
            ErrorCode::kNotSupported);
  EXPECT_EQ(error_code_of([] { npy_to_bytes(Tensor(DataType::kInt4, {2})); }),
            ErrorCode::kNotSupported);
  fs::remove_all(dir);
}

TEST(Npy, WritesVersion2ForHugeHeaders) {
  // 25000 dims of size 1 need a header over 65535 bytes.
  const Tensor t(DataType::kFloat32, Shape(25000, 1));
  const std::string bytes = npy_to_bytes(t);
  EXPECT_EQ(bytes[6], 2);
  const Tensor r = npy_from_bytes(bytes);
  EXPECT_EQ(r.shape(), t.shape());
}

TEST(Npy, MatchesNumpyByteForByte) {
  // The file numpy wrote for f32_2x3 and ours for the same tensor are identical.
  const std::string theirs = read_file(fixture("f32_2x3.npy"));
  EXPECT_EQ(npy_to_bytes(npy_from_bytes(theirs)), theirs);
  const std::string scalar = read_file(fixture("i64_scalar.npy"));
  EXPECT_EQ(npy_to_bytes(npy_from_bytes(scalar)), scalar);
  const std::string one_dim = read_file(fixture("u8_5.npy"));
  EXPECT_EQ(npy_to_bytes(npy_from_bytes(one_dim)), one_dim);
}

}  // namespace
}  // namespace trtutils
