// kiln._kiln: the Python binding of the C++ API (kiln/jit.hpp, kiln/kiln.hpp).
// The public names and argument handling are in kiln/__init__.py; this holds
// the handles, releases the GIL around every compile and load, and turns
// Kiln errors into the exceptions of kiln/_errors.py.
#include <kiln/admin.hpp>
#include <kiln/jit.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace py = pybind11;

namespace {

// Raises the kiln._errors class for the error's status, with its fields.
[[noreturn]] void raise(const kiln::Error& error) {
  const char* status = kiln_status_name(static_cast<kiln_status>(error.code));
  py::module_ errors = py::module_::import("kiln._errors");
  py::object cls = errors.attr("error_class")(status);
  py::object exc = cls(error.message, py::arg("status") = status, py::arg("source") = error.source,
                       py::arg("line") = error.line, py::arg("column") = error.column,
                       py::arg("entry") = error.entry, py::arg("target") = error.target,
                       py::arg("job") = error.job);
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

template <typename T> T value_or_raise(kiln::Result<T> r) {
  if (!r)
    raise(r.error());
  return r.take();
}

using PySources = std::vector<std::pair<std::string, py::bytes>>;

struct Inputs {
  std::vector<std::string> names, bytes;
};

Inputs inputs_of(const PySources& sources) {
  Inputs in;
  for (const auto& [name, b] : sources) {
    in.names.push_back(name);
    in.bytes.emplace_back(std::string_view(b));
  }
  return in;
}

/// A loaded image. Its addresses are valid until close() or collection.
struct PyImage {
  std::optional<kiln::Image> image;
  std::string target;
  std::optional<bool> hit;                    ///< set by compile_or_load
  std::optional<kiln::CompileReport> report;  ///< set by compile_or_load

  const kiln::Image& get() const {
    if (!image)
      throw py::value_error("the image is closed");
    return *image;
  }
};

PyImage make_image(kiln::Image img) {
  PyImage p;
  p.target = kiln_image_target(img.raw());
  p.image.emplace(std::move(img));
  return p;
}

} // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln's C++ API; use the kiln package";

  py::class_<kiln::JobReport>(m, "Job", "One job of a compile.")
      .def_readonly("key", &kiln::JobReport::key)
      .def_readonly("entry", &kiln::JobReport::entry)
      .def_readonly("target", &kiln::JobReport::target)
      .def_readonly("symbol", &kiln::JobReport::symbol)
      .def_property_readonly("status",
                             [](const kiln::JobReport& j) { return kiln::job_status_name(j.status); })
      .def_readonly("error", &kiln::JobReport::error)
      .def_readonly("refs", &kiln::JobReport::refs, "[(deferred symbol, child key)]")
      .def_readonly("compile_ms", &kiln::JobReport::compile_ms)
      .def("__repr__", [](const kiln::JobReport& j) {
        return "<kiln.Job " + j.entry + " " + j.target + " " + j.key + " " +
               kiln::job_status_name(j.status) + ">";
      });

  py::class_<kiln::RootReport>(m, "Root", "One root (entry and target) of a compile.")
      .def_readonly("name", &kiln::RootReport::name)
      .def_readonly("target", &kiln::RootReport::target)
      .def_readonly("closure", &kiln::RootReport::closure)
      .def_readonly("image", &kiln::RootReport::image)
      .def_readonly("note", &kiln::RootReport::note)
      .def_readonly("error", &kiln::RootReport::error)
      .def("__repr__", [](const kiln::RootReport& r) {
        return "<kiln.Root " + r.name + " " + r.target + " " + r.closure + ">";
      });

  py::class_<kiln::LibraryReport>(m, "Library", "A kernel library a compile recorded.")
      .def_readonly("name", &kiln::LibraryReport::name)
      .def_readonly("target", &kiln::LibraryReport::target)
      .def_readonly("closure", &kiln::LibraryReport::closure)
      .def_readonly("roots", &kiln::LibraryReport::roots)
      .def_readonly("members", &kiln::LibraryReport::members)
      .def_readonly("image", &kiln::LibraryReport::image)
      .def_readonly("note", &kiln::LibraryReport::note)
      .def_readonly("error", &kiln::LibraryReport::error)
      .def("__repr__", [](const kiln::LibraryReport& l) {
        return "<kiln.Library " + l.name + " " + l.target + " " + std::to_string(l.roots) +
               " roots " + l.closure + ">";
      });

  py::class_<kiln::CompileReport>(m, "CompileResult", "What a compile did, job by job.")
      .def_readonly("jobs", &kiln::CompileReport::jobs)
      .def_readonly("roots", &kiln::CompileReport::roots)
      .def_readonly("libraries", &kiln::CompileReport::libraries)
      .def_property_readonly("ok", &kiln::CompileReport::ok)
      .def_property_readonly("keys",
                             [](const kiln::CompileReport& r) {
                               std::vector<std::string> out;
                               for (const kiln::JobReport& j : r.jobs)
                                 out.push_back(j.key);
                               return out;
                             })
      .def_property_readonly("statuses",
                             [](const kiln::CompileReport& r) {
                               std::vector<std::string> out;
                               for (const kiln::JobReport& j : r.jobs)
                                 out.push_back(kiln::job_status_name(j.status));
                               return out;
                             })
      .def("__repr__", [](const kiln::CompileReport& r) {
        return "<kiln.CompileResult " + std::to_string(r.jobs.size()) + " jobs, " +
               std::to_string(r.roots.size()) + " roots" + (r.ok() ? "" : ", failed") + ">";
      });

  py::class_<PyImage>(m, "Image", "A loaded image of one closure.")
      .def(
          "function",
          [](const PyImage& self, const std::string& name) {
            void* p = value_or_raise(self.get().lookup(name));
            return reinterpret_cast<uintptr_t>(p);
          },
          py::arg("name"),
          "The function's host address (use with ctypes.CFUNCTYPE) or its GPU handle "
          "(CUfunction / hipFunction_t), as an int.")
      .def_property_readonly("module",
                             [](const PyImage& self) {
                               return reinterpret_cast<uintptr_t>(kiln_image_module(self.get().raw()));
                             })
      .def_readonly("target", &PyImage::target)
      .def_readonly("hit", &PyImage::hit, "compile_or_load: True if nothing was compiled")
      .def_readonly("report", &PyImage::report, "compile_or_load: the jobs of the closure")
      .def_property_readonly("closed", [](const PyImage& self) { return !self.image; })
      .def("close", [](PyImage& self) { self.image.reset(); },
           "Unloads the image: its addresses become invalid.")
      .def("__enter__", [](PyImage& self) -> PyImage& { return self; },
           py::return_value_policy::reference)
      .def("__exit__", [](PyImage& self, py::args) { self.image.reset(); });

  py::class_<kiln::Cache>(m, "Cache", "A Kiln cache file.")
      .def(py::init([](const std::optional<std::string>& path) {
             // None is the default cache; "" names no file, as in the C API.
             if (path && path->empty())
               throw py::value_error("kiln.Cache: the path is empty; pass None for the default "
                                     "cache");
             auto c = kiln::Cache::open(path ? *path : std::string());
             return value_or_raise(std::move(c));
           }),
           py::arg("path") = py::none())
      .def(
          "_compile",
          [](const kiln::Cache& self, const PySources& sources, std::vector<std::string> entries,
             std::vector<std::string> targets, int opt, bool debug, unsigned jobs, bool link,
             const std::string& library) {
            Inputs in = inputs_of(sources);
            kiln::CompileRequest req;
            for (size_t i = 0; i < in.names.size(); ++i)
              req.inputs.push_back(kiln::SourceInput::memory(in.names[i], std::move(in.bytes[i])));
            req.entries = std::move(entries);
            if (!targets.empty())
              req.targets = std::move(targets);
            req.opt_level = opt;
            req.debug = debug;
            req.jobs = jobs;
            req.link_images = link;
            req.library = library;
            kiln::Result<kiln::CompileReport> r = kiln::make_error(kiln::Code::internal, "");
            {
              py::gil_scoped_release nogil;
              r = kiln::compile(req, self);
            }
            return value_or_raise(std::move(r));
          })
      .def("_compile_or_load",
           [](const kiln::Cache& self, const PySources& sources, const std::string& entry,
              const std::string& target, int opt, bool debug, unsigned jobs) {
             Inputs in = inputs_of(sources);
             std::vector<kiln::Source> views;
             for (size_t i = 0; i < in.names.size(); ++i)
               views.push_back({in.names[i], in.bytes[i]});
             kiln::JitOptions o;
             o.opt_level = opt;
             o.debug = debug;
             o.jobs = jobs;
             kiln::Result<kiln::Loaded> r = kiln::make_error(kiln::Code::internal, "");
             {
               py::gil_scoped_release nogil;
               r = kiln::compile_or_load(self, views, entry, target, o);
             }
             kiln::Loaded loaded = value_or_raise(std::move(r));
             PyImage img = make_image(std::move(loaded.image));
             img.hit = loaded.hit;
             img.report = std::move(loaded.report);
             return img;
           })
      .def("_load",
           [](const kiln::Cache& self, const std::string& name, const std::string& target) {
             kiln::Result<kiln::Image> r = kiln::make_error(kiln::Code::internal, "");
             {
               py::gil_scoped_release nogil;
               r = self.load(name, target);
             }
             return make_image(value_or_raise(std::move(r)));
           })
      .def("_load_library",
           [](const kiln::Cache& self, const std::string& name, const std::string& target) {
             kiln::Result<kiln::Image> r = kiln::make_error(kiln::Code::internal, "");
             {
               py::gil_scoped_release nogil;
               r = self.load_library(name, target);
             }
             return make_image(value_or_raise(std::move(r)));
           })
      .def("stats", [](const kiln::Cache& self) {
        kiln::admin::Stats s = value_or_raise(kiln::admin::stats(self));
        py::dict d;
        d["jobs"] = s.jobs;
        d["closures"] = s.closures;
        d["images"] = s.images;
        d["names"] = s.names;
        d["stored_bytes"] = s.stored_bytes;
        d["raw_bytes"] = s.raw_bytes;
        d["file_bytes"] = s.file_bytes;
        d["job_hits"] = s.counters.job_hits;
        d["job_misses"] = s.counters.job_misses;
        d["image_hits"] = s.counters.image_hits;
        d["image_misses"] = s.counters.image_misses;
        d["loads"] = s.counters.loads;
        py::dict per_target;
        for (const auto& [t, n] : s.jobs_per_target)
          per_target[py::str(t)] = n;
        d["jobs_per_target"] = per_target;
        return d;
      });

  m.def("present_target", &kiln::present_target,
        "The target compile_or_load uses without one: an NVIDIA GPU's sm_XY, else 'host'.");
}
