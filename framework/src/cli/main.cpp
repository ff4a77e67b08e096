#include <iostream>

#include "host/commands.hpp"

int main(int argc, char** argv) { return mapex::host::main_cli(argc, argv, std::cout, std::cerr); }
