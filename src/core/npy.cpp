#include "trtutils/npy.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>

#include "core/check.h"
#include "trtutils/file_util.h"

namespace trtutils {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// numpy itself refuses headers over 10000 bytes unless told otherwise; this only guards
// against absurd lengths in corrupt files (the length is also checked against the file size).
constexpr uint64_t kMaxHeaderLen = 1u << 20;

struct Descr {
  DataType dtype;
  int item_bytes;
  bool big_endian;
};

// numpy dtype string ('<f4', '|u1', '>i8', '|b1', ...) -> our dtype.
std::optional<Descr> parse_descr(std::string_view d) {
  if (d.size() < 3) return std::nullopt;
  const char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return std::nullopt;
  const char kind = d[1];
  int bytes = 0;
  const auto r = std::from_chars(d.data() + 2, d.data() + d.size(), bytes);
  if (r.ec != std::errc() || r.ptr != d.data() + d.size()) return std::nullopt;
  std::optional<DataType> t;
  if (kind == 'f') {
    if (bytes == 2) t = DataType::kFloat16;
    if (bytes == 4) t = DataType::kFloat32;
    if (bytes == 8) t = DataType::kFloat64;
  } else if (kind == 'i') {
    if (bytes == 1) t = DataType::kInt8;
    if (bytes == 2) t = DataType::kInt16;
    if (bytes == 4) t = DataType::kInt32;
    if (bytes == 8) t = DataType::kInt64;
  } else if (kind == 'u') {
    if (bytes == 1) t = DataType::kUInt8;
    if (bytes == 2) t = DataType::kUInt16;
    if (bytes == 4) t = DataType::kUInt32;
    if (bytes == 8) t = DataType::kUInt64;
  } else if (kind == 'b') {
    if (bytes == 1) t = DataType::kBool;
  }
  if (!t) return std::nullopt;
  // '|' (no byte order) only makes sense for single bytes; '=' is native (little-endian here).
  if (order == '|' && bytes != 1) return std::nullopt;
  return Descr{*t, bytes, order == '>' && bytes > 1};
}

// The header as an error message shows it: one line (numpy ends it with '\n' padding, a corrupt
// one may hold any byte: control bytes are escaped), trailing padding dropped, cut after 200.
std::string shown(std::string_view header) {
  while (!header.empty() && (header.back() == ' ' || header.back() == '\n'))
    header.remove_suffix(1);
  constexpr size_t kMax = 200;
  std::string out;
  for (size_t i = 0; i < header.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(header[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\')
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return header.size() > kMax ? out + "..." : out;
}

// A tiny reader for the Python dict literal numpy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view s, std::string_view what) : s_(s), what_(what) {}

  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    TRT_CHECK_ARG(consume(c), "'{}': malformed .npy header (expected '{}' at offset {}): {}", what_,
                  c, pos_, shown(s_));
  }
  std::string string_lit() {
    skip_ws();
    TRT_CHECK_ARG(pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"'),
                  "'{}': malformed .npy header (expected a string at offset {}): {}", what_, pos_,
                  shown(s_));
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    TRT_CHECK_ARG(end != std::string_view::npos, "'{}': malformed .npy header (open string): {}",
                  what_, shown(s_));
    std::string r(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return r;
  }
  bool bool_lit() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    TRT_THROW(ErrorCode::kInvalidArgument,
              "'{}': malformed .npy header (expected True or False at offset {}): {}", what_, pos_,
              shown(s_));
  }
  Shape tuple_lit() {
    expect('(');
    Shape shape;
    while (!consume(')')) {
      skip_ws();
      int64_t v = 0;
      const auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
      TRT_CHECK_ARG(r.ec == std::errc() && v >= 0,
                    "'{}': malformed .npy header (bad dimension at offset {}): {}", what_, pos_,
                    shown(s_));
      pos_ = static_cast<size_t>(r.ptr - s_.data());
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long
      shape.push_back(v);
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  bool at_end() {
    skip_ws();
    return pos_ == s_.size();
  }

 private:
  std::string_view s_;
  std::string_view what_;
  size_t pos_ = 0;
};

uint32_t read_le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void byteswap_inplace(uint8_t* data, int64_t n, int item) {
  for (int64_t i = 0; i < n; ++i) std::reverse(data + i * item, data + (i + 1) * item);
}

const char* descr_of(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "<f4";
    case DataType::kFloat16:
      return "<f2";
    case DataType::kFloat64:
      return "<f8";
    case DataType::kInt8:
      return "|i1";
    case DataType::kUInt8:
      return "|u1";
    case DataType::kInt16:
      return "<i2";
    case DataType::kUInt16:
      return "<u2";
    case DataType::kInt32:
      return "<i4";
    case DataType::kUInt32:
      return "<u4";
    case DataType::kInt64:
      return "<i8";
    case DataType::kUInt64:
      return "<u8";
    case DataType::kBool:
      return "|b1";
    case DataType::kUndefined:
    case DataType::kString:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kUInt4:
    case DataType::kInt4:
      break;
  }
  return nullptr;
}

}  // namespace

namespace {

// Parses and checks the header at the start of `head` (a prefix of the file, or all of it) for a
// file of `file_size` bytes: the data must be exactly what the shape and dtype need.
NpyHeader parse_npy_header(std::string_view head, uint64_t file_size, std::string_view what) {
  static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");
  const auto* u = reinterpret_cast<const unsigned char*>(head.data());
  TRT_CHECK_ARG(
      head.size() >= 10 && head.substr(0, kMagicLen) == std::string_view(kMagic, kMagicLen),
      "'{}' is not a .npy file (bad magic)", what);
  const int major = u[6];
  TRT_CHECK_ARG(major >= 1 && major <= 3, "'{}': unsupported .npy format version {}.{}", what,
                major, static_cast<int>(u[7]));
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_bytes;
  TRT_CHECK_ARG(head.size() >= prefix, "'{}' is truncated (no header length)", what);
  const uint64_t header_len = read_le(u + 8, static_cast<int>(len_bytes));
  TRT_CHECK_ARG(header_len <= kMaxHeaderLen && header_len <= head.size() - prefix,
                "'{}': .npy header length {} is larger than the file ({} bytes)", what, header_len,
                file_size);
  // Version 3 headers are UTF-8; everything we accept is ASCII, so both parse the same way.
  const std::string_view header = head.substr(prefix, header_len);

  HeaderParser hp(header, what);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<Shape> shape;
  hp.expect('{');
  while (!hp.consume('}')) {
    const std::string key = hp.string_lit();
    hp.expect(':');
    if (key == "descr") {
      hp.skip_ws();
      TRT_CHECK_ARG(!hp.consume('[') && !hp.consume('{'),
                    "'{}': structured numpy dtypes are not supported (header: {})", what,
                    shown(header));
      descr = hp.string_lit();
    } else if (key == "fortran_order") {
      fortran = hp.bool_lit();
    } else if (key == "shape") {
      shape = hp.tuple_lit();
    } else {
      TRT_THROW(ErrorCode::kInvalidArgument, "'{}': unknown key '{}' in the .npy header", what,
                shown(key));
    }
    if (!hp.consume(',')) {
      hp.expect('}');
      break;
    }
  }
  TRT_CHECK_ARG(hp.at_end(), "'{}': malformed .npy header (trailing text): {}", what,
                shown(header));
  TRT_CHECK_ARG(descr && fortran && shape,
                "'{}': the .npy header lacks 'descr', 'fortran_order' or 'shape': {}", what,
                shown(header));
  const auto d = parse_descr(*descr);
  TRT_CHECK_ARG(d.has_value(),
                "'{}': numpy dtype '{}' is not supported (use float16/32/64, (u)int8/16/32/64 or "
                "bool)",
                what, shown(*descr));
  // numpy only writes True for arrays that are not also C-contiguous, so this is never a no-op.
  TRT_CHECK_ARG(!*fortran, "'{}' is Fortran-ordered; save it with numpy.ascontiguousarray", what);

  int64_t numel = 1;
  for (int64_t x : *shape) {
    TRT_CHECK_ARG(x == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / x,
                  "'{}': shape {} is too large", what, shape_str(*shape));
    numel *= x;
  }
  const uint64_t need = static_cast<uint64_t>(numel) * static_cast<uint64_t>(d->item_bytes);
  const uint64_t have = file_size - prefix - header_len;
  TRT_CHECK_ARG(have == need, "'{}': shape {} of {} needs {} bytes of data, the file has {}{}",
                what, shape_str(*shape), *descr, need, have, have < need ? " (truncated)" : "");
  return {d->dtype, *shape, prefix + header_len, d->big_endian};
}

}  // namespace

Tensor npy_from_bytes(std::string_view bytes, std::string_view what) {
  const NpyHeader h = parse_npy_header(bytes, bytes.size(), what);
  Tensor t(h.dtype, h.shape);
  const int64_t numel = t.numel();
  const size_t item = t.nbytes() / static_cast<size_t>(std::max<int64_t>(numel, 1));
  if (t.nbytes()) std::memcpy(t.raw(), bytes.data() + h.data_offset, t.nbytes());
  if (h.big_endian) byteswap_inplace(t.data<uint8_t>(), numel, static_cast<int>(item));
  if (h.dtype == DataType::kBool) {
    uint8_t* p = t.data<uint8_t>();
    for (int64_t i = 0; i < numel; ++i) p[i] = p[i] != 0;
  }
  return t;
}

NpyHeader npy_read_header(const std::filesystem::path& path) {
  const uint64_t size = readable_file_size(path, 0, ".npy file");
  const int fd = open_regular_file(path, ".npy file");
  std::string head(static_cast<size_t>(std::min<uint64_t>(size, kMaxHeaderLen + 12)), '\0');
  size_t got = 0;
  while (got < head.size()) {
    const ssize_t n = ::read(fd, head.data() + got, head.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  head.resize(got);
  return parse_npy_header(head, size, path.string());
}

Tensor npy_load(const std::filesystem::path& path) {
  return npy_from_bytes(read_file(path), path.string());
}

std::string npy_to_bytes(const Tensor& tensor) {
  const char* descr = descr_of(tensor.dtype());
  TRT_CHECK(descr != nullptr, ErrorCode::kNotSupported,
            "tensors of dtype {} cannot be saved as .npy (numpy has no such dtype)",
            dtype_name(tensor.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < tensor.rank(); ++i) {
    shape += std::to_string(tensor.dim(i));
    shape += tensor.rank() == 1 || i + 1 < tensor.rank() ? "," : "";
    if (i + 1 < tensor.rank()) shape += ' ';
  }
  shape += ')';
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // Pad with spaces and a final newline so that the data starts 64-byte aligned (as numpy does).
  auto padded = [&](size_t prefix_len) {
    return (prefix_len + header.size() + 1 + 63) / 64 * 64 - prefix_len;
  };
  const int version = padded(10) <= 65535 ? 1 : 2;  // v1 stores the length in 2 bytes
  const size_t prefix = version == 1 ? 10 : 12;
  header.append(padded(prefix) - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(version);
  out += '\0';
  const size_t hl = header.size();
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.raw()), tensor.nbytes());
  return out;
}

void npy_save(const std::filesystem::path& path, const Tensor& tensor) {
  write_file_atomic(path, npy_to_bytes(tensor));
}

}  // namespace trtutils
