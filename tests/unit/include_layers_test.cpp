// The layer rule of docs/conventions.md: a file of src/<layer>/ includes only from its own
// layer and the layers listed before it. The order is read from the document itself, so the
// rule and its check cannot drift apart.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A layer's name as the document and the includes write it: lower case and underscores.
bool layer_name(const std::string& s) {
    return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
}

// Layer name -> position, from the numbered list ("3. `backend/` ...") under "## Layers".
// (Plain string scanning: GCC 12's std::regex warns as uninitialised under the sanitizers.)
std::map<std::string, int> read_layers(const std::string& conventions_md) {
    std::istringstream in(conventions_md);
    std::map<std::string, int> rank;
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("## ", 0) == 0) inside = line == "## Layers";
        const size_t digits = line.find_first_not_of("0123456789");
        if (!inside || digits == 0 || digits == std::string::npos || line.compare(digits, 3, ". `") != 0) continue;
        const size_t start = digits + 3, end = line.find("/`", start);
        if (end != std::string::npos && layer_name(line.substr(start, end - start))) {
            rank.emplace(line.substr(start, end - start), static_cast<int>(rank.size()));
        }
    }
    return rank;
}

// "<file>: includes <header>" for each include of `text` (a file of `layer`) that goes against
// the order, or names a layer the order does not place.
std::vector<std::string> violations(const std::map<std::string, int>& rank, const std::string& layer,
                                    const std::string& file, const std::string& text) {
    std::vector<std::string> found;
    std::istringstream in(text);
    const std::string directive = "#include \"";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(directive, 0) != 0) continue;
        const size_t slash = line.find('/', directive.size()), quote = line.find('"', directive.size());
        if (slash == std::string::npos || quote == std::string::npos || slash > quote) continue;
        const std::string target = line.substr(directive.size(), slash - directive.size());
        if (!layer_name(target)) continue;
        const auto to = rank.find(target);
        if (to == rank.end() || to->second > rank.at(layer)) found.push_back(file + ": includes " + line.substr(0, quote + 1));
    }
    return found;
}

std::string read_all(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const fs::path kSource = LMFORGE_SOURCE_DIR;

}  // namespace

TEST(IncludeLayers, TheConventionsListEveryLayerOfSrc) {
    const auto rank = read_layers(read_all(kSource / "docs/conventions.md"));
    ASSERT_GE(rank.size(), 10u);
    for (const auto& e : fs::directory_iterator(kSource / "src")) {
        if (!e.is_directory()) continue;
        EXPECT_TRUE(rank.count(e.path().filename().string())) << e.path() << " is not placed";
    }
}

TEST(IncludeLayers, NoFileIncludesFromALayerAboveItsOwn) {
    const auto rank = read_layers(read_all(kSource / "docs/conventions.md"));
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(kSource / "src")) {
        const std::string ext = e.path().extension().string();
        if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".inc")) continue;
        const std::string layer = e.path().lexically_relative(kSource / "src").begin()->string();
        if (!rank.count(layer)) continue;  // the test above reports it
        for (std::string& v : violations(rank, layer, e.path().string(), read_all(e.path()))) found.push_back(v);
    }
    for (const std::string& v : found) ADD_FAILURE() << v;
}

// The check itself catches what it is for: an include up the order, and one of no known layer.
TEST(IncludeLayers, TheCheckFlagsAnIncludeUpTheOrder) {
    const auto rank = read_layers("## Layers\n\n1. `core/`: base\n2. `model/`: models\n\n## Next\n3. `cli/`\n");
    ASSERT_EQ(rank.size(), 2u);
    EXPECT_TRUE(violations(rank, "model", "m.cpp", "#include \"core/error.h\"\n#include \"model/x.h\"").empty());
    EXPECT_EQ(violations(rank, "core", "c.cpp", "#include \"model/gpt2.h\"").size(), 1u);
    EXPECT_EQ(violations(rank, "model", "m.cpp", "#include \"cli/flags.h\"").size(), 1u);
}
