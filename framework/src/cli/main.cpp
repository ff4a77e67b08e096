#include "host/commands.hpp"

#include <iostream>

int main(int argc, char** argv) { return mapex::host::main_cli(argc, argv, std::cout, std::cerr); }
