#include "engine/engine_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include "core/check.h"
#include "trtutils/file_util.h"

namespace trtutils::engine {

using nlohmann::json;

uint64_t checksum64(const uint8_t* data, size_t n, uint64_t seed) {
  constexpr uint64_t k1 = 0x9E3779B185EBCA87ULL, k2 = 0xC2B2AE3D27D4EB4FULL;
  uint64_t h = seed ^ (n * k1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = std::rotl(h ^ (w * k2), 31) * k1;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < n; ++k) tail |= static_cast<uint64_t>(data[i + k]) << (8 * k);
  h = std::rotl(h ^ (tail * k2), 31) * k1;
  h ^= h >> 33;
  h *= k2;
  h ^= h >> 29;
  return h;
}

namespace {

uint64_t file_checksum(const uint8_t* file, size_t size) {
  const uint64_t head = checksum64(file, 56);
  return checksum64(file + kHeaderSize, size - kHeaderSize, head);
}

void put_u32(std::string& s, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) s[at + k] = static_cast<char>((v >> (8 * k)) & 0xff);
}
void put_u64(std::string& s, size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) s[at + k] = static_cast<char>((v >> (8 * k)) & 0xff);
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(p[k]) << (8 * k);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}
uint64_t align_up(uint64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

std::string to_hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string r;
  r.reserve(s.size() * 2);
  for (unsigned char c : s) {
    r += d[c >> 4];
    r += d[c & 15];
  }
  return r;
}
uint32_t float_bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

json value_to_json(const ir::ValueInfo& v) {
  json j{{"name", v.name}, {"dtype", static_cast<int>(v.dtype)}};
  if (!v.shape) {
    j["shape"] = nullptr;
  } else {
    json dims = json::array();
    for (const auto& d : *v.shape) {
      if (d.is_static())
        dims.push_back(d.value);
      else if (!d.param.empty())
        dims.push_back(d.param);
      else
        dims.push_back(nullptr);
    }
    j["shape"] = dims;
  }
  return j;
}

// ---- reading helpers: every access checked, messages name the file ----

struct Reader {
  const std::string& source;

  [[noreturn]] void fail(const std::string& what) const {
    TRT_THROW(ErrorCode::kInvalidArgument, "{}: invalid engine file: {}", source, what);
  }
  const json& field(const json& obj, const char* key) const {
    if (!obj.is_object()) fail(fmt::format("expected an object holding '{}'", key));
    auto it = obj.find(key);
    if (it == obj.end()) fail(fmt::format("missing field '{}'", key));
    return *it;
  }
  std::string str(const json& obj, const char* key) const {
    const json& v = field(obj, key);
    if (!v.is_string()) fail(fmt::format("field '{}' is not a string", key));
    return v.get<std::string>();
  }
  int64_t integer(const json& v, const char* what) const {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) fail(fmt::format("{} is out of range", what));
      return static_cast<int64_t>(u);
    }
    if (!v.is_number_integer()) fail(fmt::format("{} is not an integer", what));
    return v.get<int64_t>();
  }
  const json& array(const json& obj, const char* key) const {
    const json& v = field(obj, key);
    if (!v.is_array()) fail(fmt::format("field '{}' is not an array", key));
    return v;
  }
  std::vector<std::string> strings(const json& obj, const char* key) const {
    std::vector<std::string> r;
    for (const auto& e : array(obj, key)) {
      if (!e.is_string()) fail(fmt::format("'{}' holds a non-string", key));
      r.push_back(e.get<std::string>());
    }
    return r;
  }
  DataType dtype(const json& v, const std::string& what) const {
    const int64_t d = integer(v, "dtype");
    if (d <= 0 || d > 64 || dtype_bits(static_cast<DataType>(d)) <= 0)
      fail(fmt::format("{} has an unknown dtype {}", what, d));
    return static_cast<DataType>(d);
  }
  std::string from_hex(const std::string& h) const {
    if (h.size() % 2) fail("odd-length hex string");
    std::string r(h.size() / 2, '\0');
    auto nib = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      fail("bad hex digit");
    };
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = static_cast<char>(nib(h[2 * i]) * 16 + nib(h[2 * i + 1]));
    return r;
  }
  float float_from(const json& v) const {
    const int64_t b = integer(v, "float bits");
    if (b < 0 || b > 0xffffffffLL) fail("float bit pattern out of range");
    return std::bit_cast<float>(static_cast<uint32_t>(b));
  }
  ir::ValueInfo value(const json& j) const {
    ir::ValueInfo v;
    v.name = str(j, "name");
    const json& d = field(j, "dtype");
    v.dtype = integer(d, "dtype") == 0 ? DataType::kUndefined : dtype(d, "value '" + v.name + "'");
    const json& s = field(j, "shape");
    if (s.is_null()) return v;
    if (!s.is_array() || s.size() > 64) fail(fmt::format("value '{}' has a bad shape", v.name));
    ir::SymShape shape;
    for (const auto& d2 : s) {
      if (d2.is_null()) {
        shape.emplace_back();
      } else if (d2.is_string()) {
        shape.emplace_back(d2.get<std::string>());
      } else {
        const int64_t n = integer(d2, "dimension");
        if (n < 0) fail(fmt::format("value '{}' has a negative dimension", v.name));
        shape.emplace_back(n);
      }
    }
    v.shape = shape;
    return v;
  }
};

// The deepest bracket nesting of a JSON text (strings skipped): refused above a bound so that
// no parser or destructor recursion can exhaust the stack.
constexpr int kMaxSubgraphDepth = 4;  // an If inside an If inside ...: far beyond real models

size_t json_depth(std::string_view s) {
  size_t depth = 0, best = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      best = std::max(best, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return best;
}

}  // namespace

namespace {

// The weight section being assembled: each tensor once, named (prefix + name) in "weights".
struct Blobs {
  std::string prefix;  // "" for the plain graph, "@gpu/" for the GPU plan's own tensors
  std::vector<std::pair<std::string, const Tensor*>> list;
  size_t add(const std::string& name, const Tensor* t) {
    list.emplace_back(prefix + name, t);
    return list.size() - 1;
  }
};

json graph_json(const ir::Graph& g, const std::string& path, Blobs& blobs,
                const std::vector<LayerRecord>* layers);

// One node's attributes; tensors (and subgraph initializers) go to blobs, referenced by index.
json attributes_json(const ir::Node& n, const std::string& path, Blobs& blobs) {
  json attrs = json::array();
  for (const auto& [name, a] : n.attributes) {
    json ja{{"name", name}};
    switch (a.kind) {
      case ir::Attribute::Kind::kInt:
        ja["kind"] = "int";
        ja["value"] = a.i;
        break;
      case ir::Attribute::Kind::kFloat:
        ja["kind"] = "float";
        ja["value"] = float_bits(a.f);
        break;
      case ir::Attribute::Kind::kString:
        ja["kind"] = "string";
        ja["value"] = to_hex(a.s);
        break;
      case ir::Attribute::Kind::kInts:
        ja["kind"] = "ints";
        ja["value"] = a.ints;
        break;
      case ir::Attribute::Kind::kFloats: {
        ja["kind"] = "floats";
        json v = json::array();
        for (float f : a.floats) v.push_back(float_bits(f));
        ja["value"] = v;
        break;
      }
      case ir::Attribute::Kind::kStrings: {
        ja["kind"] = "strings";
        json v = json::array();
        for (const auto& s : a.strings) v.push_back(to_hex(s));
        ja["value"] = v;
        break;
      }
      case ir::Attribute::Kind::kTensor:
        ja["kind"] = "tensor";
        ja["value"] = blobs.add("@attr" + path + "/" + n.name + "/" + name, &a.t);
        break;
      case ir::Attribute::Kind::kGraph:  // control flow (If): the branch, recursively
        TRT_CHECK(a.g != nullptr, ErrorCode::kInvalidArgument, "{}: attribute '{}' holds no graph",
                  n.describe(), name);
        ja["kind"] = "graph";
        ja["value"] = graph_json(*a.g, path + "/" + n.name + "/" + name, blobs, nullptr);
        break;
      case ir::Attribute::Kind::kUndefined:
        TRT_THROW(ErrorCode::kNotSupported, "{}: attribute '{}' has no value", n.describe(), name);
    }
    attrs.push_back(std::move(ja));
  }
  return attrs;
}

json layer_json(json node, const LayerRecord& l) {
  node["precision"] = l.precision;
  node["device"] = l.device;
  node["kernel"] = l.kernel;
  node["tactic"] = l.tactic;
  node["layout"] = l.layout;
  return node;
}

// A graph: nodes (with their layer records at the top level), inputs, outputs, value infos;
// a subgraph (layers null) also lists its initializers as weight indices.
json graph_json(const ir::Graph& g, const std::string& path, Blobs& blobs,
                const std::vector<LayerRecord>* layers) {
  json nodes = json::array();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    json jn{{"name", n.name},       {"op", n.op_type},
            {"domain", n.domain},   {"inputs", n.inputs},
            {"outputs", n.outputs}, {"attributes", attributes_json(n, path, blobs)}};
    nodes.push_back(layers ? layer_json(std::move(jn), (*layers)[i]) : std::move(jn));
  }
  json graph{{"name", g.name}, {"nodes", std::move(nodes)}};
  json ins = json::array(), outs = json::array(), values = json::array();
  for (const auto& v : g.inputs) ins.push_back(value_to_json(v));
  for (const auto& v : g.outputs) outs.push_back(value_to_json(v));
  for (const auto& [name, v] : g.value_info) values.push_back(value_to_json(v));
  graph["inputs"] = std::move(ins);
  graph["outputs"] = std::move(outs);
  graph["values"] = std::move(values);
  if (!layers) {
    json inits = json::array();
    for (const auto& [name, t] : g.initializers)
      inits.push_back({{"name", name}, {"weight", blobs.add("@graph" + path + "/" + name, &t)}});
    graph["initializers"] = std::move(inits);
  }
  return graph;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.raw() == b.raw() && a.dtype() == b.dtype() && a.shape() == b.shape();
}

// The GPU plan's graph (layer records in its nodes) and its initializers as weight indices: a
// plain initializer it shares (same name, same tensor) by that weight's index (plain_index), any
// other one as its own weight "@gpu/<name>".
json gpu_graph_json(const GpuPlanData& gpu, const ir::Graph& plain,
                    const std::map<std::string, size_t>& plain_index, Blobs& blobs) {
  TRT_CHECK(gpu.layers.size() == gpu.graph.nodes.size(), ErrorCode::kInternal,
            "engine: {} GPU layer records for {} nodes", gpu.layers.size(), gpu.graph.nodes.size());
  blobs.prefix = "@gpu/";
  json graph = graph_json(gpu.graph, "", blobs, &gpu.layers);
  json inits = json::array();
  for (const auto& [name, t] : gpu.graph.initializers) {
    const Tensor* p = plain.initializer(name);
    const size_t index = p && same_tensor(*p, t) ? plain_index.at(name) : blobs.add(name, &t);
    inits.push_back({{"name", name}, {"weight", index}});
  }
  graph["initializers"] = std::move(inits);
  blobs.prefix.clear();
  return graph;
}

json weights_json(const Blobs& blobs, std::vector<uint64_t>& offsets, uint64_t& blob_size) {
  json weights = json::array();
  blob_size = 0;
  for (const auto& [name, t] : blobs.list) {
    offsets.push_back(blob_size);
    weights.push_back({{"name", name},
                       {"dtype", static_cast<int>(t->dtype())},
                       {"shape", t->shape()},
                       {"offset", blob_size},
                       {"size", t->nbytes()}});
    blob_size = align_up(blob_size + t->nbytes());
  }
  return weights;
}

}  // namespace

std::string serialize_engine(const EngineData& e) {
  const ir::Graph& g = e.model.graph;
  TRT_CHECK(e.layers.size() == g.nodes.size(), ErrorCode::kInternal,
            "engine: {} layer records for {} nodes", e.layers.size(), g.nodes.size());
  // Weights: initializers, then tensor attributes and subgraph initializers, then the GPU plan's.
  Blobs blobs;
  std::map<std::string, size_t> plain_index;
  for (const auto& [name, t] : g.initializers) plain_index[name] = blobs.add(name, &t);
  json graph = graph_json(g, "", blobs, &e.layers);
  json gpu_graph = e.gpu ? gpu_graph_json(*e.gpu, g, plain_index, blobs) : json();
  uint64_t blob_size = 0;
  std::vector<uint64_t> offsets;
  json weights = weights_json(blobs, offsets, blob_size);
  json opsets = json::array();
  for (const auto& o : e.model.opset_imports)
    opsets.push_back({{"domain", o.domain}, {"version", o.version}});
  json meta{{"producer", std::string("trtutils ") + TRTUTILS_VERSION},
            {"opsets", std::move(opsets)},
            {"graph", std::move(graph)},
            {"weights", std::move(weights)},
            {"info", e.info}};
  if (e.gpu) meta["gpu_graph"] = std::move(gpu_graph);
  const std::string meta_text = meta.dump(-1, ' ', false, json::error_handler_t::replace);

  const uint64_t meta_offset = kHeaderSize;
  const uint64_t blob_offset = align_up(meta_offset + meta_text.size());
  const uint64_t file_size = blob_offset + blob_size;
  std::string out(file_size, '\0');
  std::memcpy(out.data(), kMagic, 8);
  put_u32(out, 8, kFormatVersion);
  put_u32(out, 12, static_cast<uint32_t>(kHeaderSize));
  put_u64(out, 16, file_size);
  put_u64(out, 24, meta_offset);
  put_u64(out, 32, meta_text.size());
  put_u64(out, 40, blob_offset);
  put_u64(out, 48, blob_size);
  std::memcpy(out.data() + meta_offset, meta_text.data(), meta_text.size());
  for (size_t k = 0; k < blobs.list.size(); ++k) {
    const Tensor& t = *blobs.list[k].second;
    if (t.nbytes()) std::memcpy(out.data() + blob_offset + offsets[k], t.raw(), t.nbytes());
  }
  put_u64(out, 56, file_checksum(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
  return out;
}

namespace {

// The weights section: each entry checked (dtype, shape, offset and size inside the blob).
void read_weights(const Reader& r, const json& meta, const std::shared_ptr<uint8_t>& bytes,
                  uint64_t blob_off, uint64_t blob_size, std::vector<Tensor>& tensors,
                  std::vector<std::string>& names) {
  for (const auto& w : r.array(meta, "weights")) {
    const std::string name = r.str(w, "name");
    const DataType dt = r.dtype(r.field(w, "dtype"), "weight '" + name + "'");
    Shape shape;
    const json& js = r.array(w, "shape");
    if (js.size() > 64) r.fail(fmt::format("weight '{}' has rank {}", name, js.size()));
    for (const auto& d : js) {
      const int64_t n = r.integer(d, "weight dimension");
      if (n < 0) r.fail(fmt::format("weight '{}' has a negative dimension", name));
      shape.push_back(n);
    }
    const int64_t numel = shape_numel(shape);  // throws on overflow
    const int64_t off = r.integer(r.field(w, "offset"), "weight offset");
    const int64_t sz = r.integer(r.field(w, "size"), "weight size");
    if (off < 0 || sz < 0 || static_cast<uint64_t>(off) % kAlignment != 0 ||
        static_cast<uint64_t>(off) > blob_size ||
        static_cast<uint64_t>(sz) > blob_size - static_cast<uint64_t>(off))
      r.fail(fmt::format("weight '{}' lies outside the weight section", name));
    if (static_cast<size_t>(sz) != dtype_storage_bytes(dt, numel))
      r.fail(fmt::format("weight '{}' has {} bytes for a {} {} tensor", name, sz, dtype_name(dt),
                         shape_str(shape)));
    std::shared_ptr<uint8_t> data(bytes, bytes.get() + blob_off + off);
    tensors.push_back(Tensor::wrap(dt, shape, std::move(data)));
    names.push_back(name);
  }
}

// Reads graphs (and, in control-flow attributes, subgraphs) over the weights already read;
// `used` collects the weights its tensor attributes and subgraph initializers take.
struct GraphReader {
  const Reader& r;
  const std::vector<Tensor>& weights;
  std::set<size_t> used{};

  const Tensor& weight(const json& v, const std::string& what) {
    const int64_t idx = r.integer(v, what.c_str());
    if (idx < 0 || static_cast<size_t>(idx) >= weights.size())
      r.fail(fmt::format("{} index out of range", what));
    used.insert(static_cast<size_t>(idx));
    return weights[static_cast<size_t>(idx)];
  }

  // [{"name", "weight"}] into g's initializers (no name twice).
  void initializers(const json& jg, ir::Graph& g, const char* what) {
    for (const auto& ji : r.array(jg, "initializers")) {
      const std::string name = r.str(ji, "name");
      if (!g.initializers.emplace(name, weight(r.field(ji, "weight"), what)).second)
        r.fail(fmt::format("{} '{}' appears twice", what, name));
    }
  }

  void list_attribute(ir::Attribute& a, const std::string& kind, const json& v) {
    if (!v.is_array()) r.fail("list attribute is not an array");
    for (const auto& e : v) {
      if (kind == "ints") {
        a.ints.push_back(r.integer(e, "attribute"));
      } else if (kind == "floats") {
        a.floats.push_back(r.float_from(e));
      } else {
        if (!e.is_string()) r.fail("strings attribute holds a non-string");
        a.strings.push_back(r.from_hex(e.get<std::string>()));
      }
    }
    a.kind = kind == "ints"     ? ir::Attribute::Kind::kInts
             : kind == "floats" ? ir::Attribute::Kind::kFloats
                                : ir::Attribute::Kind::kStrings;
  }

  ir::Attribute attribute(const json& ja, const std::string& node, int depth) {
    ir::Attribute a;
    a.name = r.str(ja, "name");
    const std::string kind = r.str(ja, "kind");
    const json& v = r.field(ja, "value");
    if (kind == "int") {
      a.kind = ir::Attribute::Kind::kInt;
      a.i = r.integer(v, "attribute");
    } else if (kind == "float") {
      a.kind = ir::Attribute::Kind::kFloat;
      a.f = r.float_from(v);
    } else if (kind == "string") {
      a.kind = ir::Attribute::Kind::kString;
      if (!v.is_string()) r.fail("string attribute is not a string");
      a.s = r.from_hex(v.get<std::string>());
    } else if (kind == "ints" || kind == "floats" || kind == "strings") {
      list_attribute(a, kind, v);
    } else if (kind == "tensor") {
      a.kind = ir::Attribute::Kind::kTensor;
      a.t = weight(v, fmt::format("node '{}': tensor attribute", node));
    } else if (kind == "graph") {
      if (depth >= kMaxSubgraphDepth) r.fail("subgraphs nested too deeply");
      if (!v.is_object()) r.fail(fmt::format("node '{}': graph attribute", node));
      a.kind = ir::Attribute::Kind::kGraph;
      a.g = std::make_shared<ir::Graph>();
      graph(v, *a.g, nullptr, depth + 1);
    } else {
      r.fail(fmt::format("node '{}': unknown attribute kind '{}'", node, kind));
    }
    return a;
  }

  LayerRecord layer(const json& jn) const {
    LayerRecord l{r.str(jn, "precision"), r.str(jn, "device"), r.str(jn, "kernel"),
                  r.str(jn, "tactic"), ""};
    if (jn.contains("layout")) l.layout = r.str(jn, "layout");  // version >= 2
    return l;
  }

  // A graph; layers (top level) collects its nodes' layer records, a subgraph (layers null)
  // also reads its initializers.
  void graph(const json& jg, ir::Graph& g, std::vector<LayerRecord>* layers, int depth) {
    g.name = r.str(jg, "name");
    for (const auto& v : r.array(jg, "inputs")) g.inputs.push_back(r.value(v));
    for (const auto& v : r.array(jg, "outputs")) g.outputs.push_back(r.value(v));
    for (const auto& v : r.array(jg, "values")) {
      ir::ValueInfo vi = r.value(v);
      g.value_info[vi.name] = vi;
    }
    if (!layers) initializers(jg, g, "subgraph weight");
    for (const auto& jn : r.array(jg, "nodes")) {
      ir::Node n;
      n.name = r.str(jn, "name");
      n.op_type = r.str(jn, "op");
      n.domain = r.str(jn, "domain");
      n.inputs = r.strings(jn, "inputs");
      n.outputs = r.strings(jn, "outputs");
      for (const auto& ja : r.array(jn, "attributes")) {
        ir::Attribute a = attribute(ja, n.name, depth);
        n.attributes[a.name] = std::move(a);
      }
      if (layers) layers->push_back(layer(jn));
      g.nodes.push_back(std::move(n));
    }
  }
};

constexpr std::string_view kGpuWeightPrefix = "@gpu/";

void validate_graph(const Reader& r, const ir::Graph& g, const char* section) {
  try {
    g.validate();
  } catch (const Error& e) {
    r.fail(fmt::format("{}: {}", section, e.what()));
  }
}

// The same names and dtypes, in the same order.
bool same_values(const std::vector<ir::ValueInfo>& a, const std::vector<ir::ValueInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype) return false;
  return true;
}

// "gpu_graph": the graph checked as "graph" is, its inputs and outputs the plain graph's.
GpuPlanData read_gpu_plan(const Reader& r, const json& jg, const std::vector<Tensor>& weights,
                          const ir::Graph& plain) {
  GpuPlanData gpu;
  GraphReader reader{r, weights};
  reader.graph(jg, gpu.graph, &gpu.layers, 0);
  reader.initializers(jg, gpu.graph, "gpu_graph weight");
  validate_graph(r, gpu.graph, "gpu_graph");
  if (!same_values(gpu.graph.inputs, plain.inputs) ||
      !same_values(gpu.graph.outputs, plain.outputs))
    r.fail("gpu_graph: its inputs or outputs differ from the graph's");
  return gpu;
}

// info "gpu_tactics" (what the runtime preloads and inspect prints): an object whose "choices"
// map strings to strings, whose other members but "shapes" are strings.
void check_gpu_tactics(const Reader& r, const json& info) {
  auto it = info.find("gpu_tactics");
  if (it == info.end()) return;
  if (!it->is_object()) r.fail("info 'gpu_tactics' is not an object");
  for (const auto& [key, v] : it->items()) {
    if (key == "shapes") continue;
    if (key != "choices") {
      if (!v.is_string()) r.fail(fmt::format("info 'gpu_tactics': '{}' is not a string", key));
      continue;
    }
    if (!v.is_object()) r.fail("info 'gpu_tactics': 'choices' is not an object");
    for (const auto& [what, choice] : v.items())
      if (!choice.is_string())
        r.fail(fmt::format("info 'gpu_tactics': the choice for '{}' is not a string", what));
  }
}

void read_metadata(const Reader& r, const json& meta, std::shared_ptr<uint8_t> bytes,
                   uint64_t blob_off, uint64_t blob_size, EngineData& out) {
  ir::Model& m = out.model;
  for (const auto& o : r.array(meta, "opsets")) {
    const int64_t v = r.integer(r.field(o, "version"), "opset version");
    if (v < 1 || v > 1000) r.fail("opset version out of range");
    m.opset_imports.push_back({r.str(o, "domain"), v});
  }
  std::vector<Tensor> weights;
  std::vector<std::string> names;
  read_weights(r, meta, bytes, blob_off, blob_size, weights, names);
  ir::Graph& g = m.graph;
  GraphReader reader{r, weights};
  reader.graph(r.field(meta, "graph"), g, &out.layers, 0);
  // The weights no attribute or subgraph takes, but the GPU plan's own, are the initializers.
  for (size_t k = 0; k < weights.size(); ++k)
    if (!reader.used.count(k) && !names[k].starts_with(kGpuWeightPrefix) &&
        !g.initializers.emplace(names[k], weights[k]).second)
      r.fail(fmt::format("weight '{}' appears twice", names[k]));
  // The same checks as for a loaded ONNX model (a graph the builder wrote passes them).
  validate_graph(r, g, "graph");
  out.info = r.field(meta, "info");
  if (!out.info.is_object()) r.fail("'info' is not an object");
  check_gpu_tactics(r, out.info);
  if (meta.contains("gpu_graph")) {
    if (out.info.value("backend", "") != "cuda") r.fail("gpu_graph in an engine not for cuda");
    out.gpu = read_gpu_plan(r, meta["gpu_graph"], weights, g);
  }
  if (meta.contains("producer") && meta["producer"].is_string())
    out.producer = meta["producer"].get<std::string>();
}

}  // namespace

EngineData deserialize_engine(std::shared_ptr<uint8_t> bytes, size_t size,
                              const std::string& source) {
  const Reader r{source};
  const uint8_t* p = bytes.get();
  if (size < kHeaderSize || std::memcmp(p, kMagic, 8) != 0)
    TRT_THROW(ErrorCode::kInvalidArgument,
              "{}: not a trtutils engine (no 'TRTUENG' header); build one with `trtutils build`",
              source);
  const uint32_t version = get_u32(p + 8);
  if (version < kOldestFormatVersion || version > kFormatVersion)
    TRT_THROW(ErrorCode::kInvalidArgument,
              "{}: engine format version {}, but this trtutils ({}) reads versions {} to {}: "
              "rebuild the engine with this trtutils",
              source, version, TRTUTILS_VERSION, kOldestFormatVersion, kFormatVersion);
  if (get_u32(p + 12) != kHeaderSize) r.fail("bad header size");
  const uint64_t file_size = get_u64(p + 16);
  if (file_size != size)
    TRT_THROW(ErrorCode::kInvalidArgument,
              "{}: the header says {} bytes but the file has {}: it is truncated or was "
              "appended to; rebuild the engine",
              source, file_size, size);
  const uint64_t stored = get_u64(p + 56);
  if (stored != file_checksum(p, size))
    TRT_THROW(ErrorCode::kInvalidArgument,
              "{}: checksum mismatch: the engine file is corrupted; rebuild it", source);
  const uint64_t meta_off = get_u64(p + 24), meta_size = get_u64(p + 32);
  const uint64_t blob_off = get_u64(p + 40), blob_size = get_u64(p + 48);
  if (meta_off != kHeaderSize || meta_size > size - meta_off || blob_off % kAlignment != 0 ||
      blob_off < meta_off + meta_size || blob_off > size || blob_size != size - blob_off)
    r.fail("section offsets or sizes are inconsistent");
  const std::string_view meta_text(reinterpret_cast<const char*>(p + meta_off), meta_size);
  if (json_depth(meta_text) > 48) r.fail("metadata nested too deeply");
  json meta;
  try {
    meta = json::parse(meta_text);
  } catch (const json::exception& e) {
    r.fail(std::string("metadata is not valid JSON: ") + e.what());
  }

  EngineData out;
  try {
    read_metadata(r, meta, std::move(bytes), blob_off, blob_size, out);
  } catch (const json::exception& e) {
    r.fail(std::string("metadata: ") + e.what());
  }
  out.format_version = version;
  return out;
}

EngineData read_engine_file(const std::filesystem::path& path) {
  const int fd = open_regular_file(path, "engine file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    TRT_THROW(ErrorCode::kIO, "cannot read engine file '{}': {}", path.string(),
              std::strerror(errno));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < kHeaderSize) {
    ::close(fd);
    TRT_THROW(ErrorCode::kInvalidArgument,
              "{}: not a trtutils engine ({} bytes, shorter than the header); build one with "
              "`trtutils build`",
              path.string(), size);
  }
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  TRT_CHECK(m != MAP_FAILED, ErrorCode::kIO, "cannot map {}: {}", path.string(),
            std::strerror(errno));
  std::shared_ptr<uint8_t> bytes(static_cast<uint8_t*>(m),
                                 [size](uint8_t* q) { ::munmap(q, size); });
  return deserialize_engine(std::move(bytes), size, path.string());
}

void write_engine_file(const std::filesystem::path& path, const EngineData& engine) {
  write_file_atomic(path, serialize_engine(engine));
}

}  // namespace trtutils::engine
