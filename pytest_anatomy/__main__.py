from pytest_anatomy.cli import main

raise SystemExit(main())
