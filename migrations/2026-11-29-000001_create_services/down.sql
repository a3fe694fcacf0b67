DROP TABLE services;
